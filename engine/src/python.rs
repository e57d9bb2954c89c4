//! PyO3 bindings: the `wiredump._engine` extension module.

use pyo3::prelude::*;

mod kafka;

/// The native engine's version.
#[pyfunction]
fn version() -> &'static str {
    crate::VERSION
}

#[pymodule]
fn _engine(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(version, m)?)?;
    kafka::register(m)?;
    Ok(())
}
