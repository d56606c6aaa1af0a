use ptxkit::dsl::Target;

/// Why a command failed. [`CliError::exit_code`] maps it to the documented exit status.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    #[error("no kernel named `{0}`; `ptxkit emit` without --kernels lists every available kernel")]
    UnknownKernel(String),
    #[error("{0}")]
    Usage(String),
    #[error("could not read {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("could not write {path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error(transparent)]
    Runtime(#[from] ptxkit::runtime::Error),
    #[error(transparent)]
    Train(#[from] ptxkit::train::TrainError),
    #[error(transparent)]
    Quantize(#[from] ptxkit::gguf::llama::LlamaError),
    #[error(transparent)]
    Gguf(#[from] ptxkit::gguf::GgufError),
    #[error(transparent)]
    Serve(#[from] ptxkit::serve::ServeError),
    #[error("{0} sample(s) did not match their CPU reference")]
    SamplesFailed(usize),
    #[error("no kernel could be emitted for {0:?}: every one needs a different target")]
    NothingEmitted(Vec<Target>),
}

impl CliError {
    /// 2 for what the user typed (as for clap's own usage errors), 1 for work that failed.
    pub fn exit_code(&self) -> i32 {
        match self {
            CliError::UnknownKernel(_) | CliError::Usage(_) => 2,
            _ => 1,
        }
    }
}
