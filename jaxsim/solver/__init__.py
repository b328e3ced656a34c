"""Solvers shared by the contact models."""
