"""Synthetic sbrig captures with exactly known truth (see synthcap.py)."""
