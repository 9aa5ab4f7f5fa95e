//! lease-elect: client-go's leader election over a generic async lock.
