//! gRPC service (to be written).
