"""Shared test helpers: tiny random models (`tiny`), task folders (`tasks`), paths (`paths`), CLI checks (`cli`)."""
