//! A Redis lock for lease-elect: one key per lock, SET NX to create and a Lua compare-and-swap to update.
