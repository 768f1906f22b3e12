//! Safe API (in progress).
