//! An etcd lock for lease-elect: one key per lock, transactions on create and mod revisions.
