//! kube-scheduler's legacy Policy JSON, compiled once into a scheduler.
