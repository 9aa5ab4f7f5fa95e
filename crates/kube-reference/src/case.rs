//! A case folder.
