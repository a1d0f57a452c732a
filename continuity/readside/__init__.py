"""readside."""
