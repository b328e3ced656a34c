"""Collision geometry: contact volumes and contact polygons of convex shapes."""
