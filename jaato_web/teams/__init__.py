"""Accounts and access: who belongs to which project, with which role, and what they did."""
