//! A PostgreSQL lock for lease-elect: one row per lock, compare-and-swap on a version column.
