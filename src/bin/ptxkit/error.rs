use ptxkit::dsl::Target;

#[derive(Debug, thiserror::Error)]
pub enum CliError {
    #[error("{0}")]
    Usage(String),
    #[error("{0}")]
    Target(#[from] ptxkit::dsl::target::TargetParseError),
    #[error("no kernel named `{0}`; `ptxkit emit` without --kernels lists every available kernel")]
    UnknownKernel(String),
    #[error("could not write {path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error(transparent)]
    Runtime(#[from] ptxkit::runtime::Error),
    #[error(transparent)]
    Train(#[from] ptxkit::train::TrainError),
    #[error("{0} sample(s) did not match their CPU reference")]
    SamplesFailed(usize),
    #[error("no kernel could be emitted for {0:?}: every one needs a different target")]
    NothingEmitted(Vec<Target>),
}
