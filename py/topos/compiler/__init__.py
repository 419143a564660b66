"""Inspect, lower, emit and extend: the readings after the seal."""
