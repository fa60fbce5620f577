"""Server-rendered pages of the dashboard (htmx for the interactive parts)."""
