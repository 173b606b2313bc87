//! REST endpoints (to be written).
