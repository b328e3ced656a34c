"""Contact models: contact-space operators and the point-contact model."""
