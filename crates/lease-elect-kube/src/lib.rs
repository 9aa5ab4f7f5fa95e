//! A Kubernetes Lease lock for lease-elect, mapped exactly like client-go's LeaseLock.
