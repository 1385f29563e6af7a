//! The peers schedkit's runtime is measured against.

pub mod go;
pub mod threads;
pub mod tokio_rt;
