//! Captured graphs and a cache of them keyed by shape. A graph replays the same launches on the
//! same device addresses, so new contents copied into its buffers are seen on replay; a new
//! shape needs a new capture.

use crate::config::LaunchConfig;

use crate::emulator::{EmuArg, ModuleId, SharedEngine};
use crate::error::Result;
use crate::stream::{run_op, Stream};
use cudarc::driver::CudaGraph;
use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::hash::Hash;
use std::sync::Arc;

/// Something a graph keeps alive while it can be replayed (a buffer, a communicator).
pub(crate) type KeptAlive = Arc<dyn std::any::Any + Send + Sync>;

/// One recorded emulator launch.
pub(crate) struct EmuOp {
    pub module: ModuleId,
    pub entry: String,
    pub cfg: LaunchConfig,
    pub args: Vec<EmuArg>,
}

/// A captured sequence of launches, replayed on the stream it was captured on.
///
/// ```
/// # fn main() -> Result<(), kernel_runtime::Error> {
/// let stream = kernel_runtime::Device::emulator().stream()?;
/// let graph = stream.capture(|_| Ok(()))?;
/// assert_eq!(graph.launches(), 0);
/// graph.replay()?;
/// # Ok(()) }
/// ```
pub struct Graph {
    inner: Inner,
    /// Buffers the graph reads or writes and communicators its collectives use, kept alive as
    /// long as it can be replayed. Declared after `inner`, so they outlive the driver's graph:
    /// NCCL tears a communicator down only once no graph holds its captured collectives.
    _keepalive: Vec<KeptAlive>,
    launches: usize,
}

enum Inner {
    /// `None` when nothing was captured (the driver returns no graph).
    Cuda(Option<CudaGraph>),
    Emulator {
        engine: SharedEngine,
        ops: Vec<EmuOp>,
    },
}

impl Graph {
    pub(crate) fn cuda(
        graph: Option<CudaGraph>,
        launches: usize,
        keepalive: Vec<KeptAlive>,
    ) -> Graph {
        Graph {
            inner: Inner::Cuda(graph),
            _keepalive: keepalive,
            launches,
        }
    }

    pub(crate) fn emulated(
        engine: SharedEngine,
        ops: Vec<EmuOp>,
        keepalive: Vec<KeptAlive>,
    ) -> Graph {
        let launches = ops.len();
        Graph {
            inner: Inner::Emulator { engine, ops },
            _keepalive: keepalive,
            launches,
        }
    }

    /// Runs the captured launches again, in order, on the stream they were captured on.
    ///
    /// ```
    /// # fn main() -> Result<(), kernel_runtime::Error> {
    /// let stream = kernel_runtime::Device::emulator().stream()?;
    /// stream.capture(|_| Ok(()))?.replay()?;
    /// # Ok(()) }
    /// ```
    pub fn replay(&self) -> Result<()> {
        match &self.inner {
            Inner::Cuda(None) => Ok(()),
            Inner::Cuda(Some(g)) => g
                .launch()
                .map_err(|e| crate::Error::driver("cuGraphLaunch", e)),
            Inner::Emulator { engine, ops } => ops.iter().try_for_each(|op| run_op(engine, op)),
        }
    }

    /// How many launches were captured.
    ///
    /// ```
    /// # fn main() -> Result<(), kernel_runtime::Error> {
    /// let stream = kernel_runtime::Device::emulator().stream()?;
    /// assert_eq!(stream.capture(|_| Ok(()))?.launches(), 0);
    /// # Ok(()) }
    /// ```
    pub fn launches(&self) -> usize {
        self.launches
    }
}

/// Graphs keyed by a shape key the caller chooses (for example `(batch, seq_len)`): a key seen
/// before replays its graph; a new key captures one first.
///
/// ```
/// # fn main() -> Result<(), kernel_runtime::Error> {
/// let stream = kernel_runtime::Device::emulator().stream()?;
/// let mut graphs = kernel_runtime::GraphCache::new();
/// assert!(graphs.run(&stream, (1, 128), |_s| Ok(()))?); // captured, then replayed
/// assert!(!graphs.run(&stream, (1, 128), |_s| Ok(()))?); // replayed only
/// assert_eq!(graphs.len(), 1);
/// # Ok(()) }
/// ```
pub struct GraphCache<K> {
    graphs: HashMap<K, Graph>,
}

impl<K: Eq + Hash> Default for GraphCache<K> {
    fn default() -> Self {
        GraphCache {
            graphs: HashMap::new(),
        }
    }
}

impl<K: Eq + Hash> GraphCache<K> {
    /// An empty cache.
    ///
    /// ```
    /// let cache = kernel_runtime::GraphCache::<u32>::new();
    /// assert!(cache.is_empty());
    /// ```
    pub fn new() -> GraphCache<K> {
        GraphCache::default()
    }

    /// Replays the graph for `key`, capturing it with `record` first if `key` is new. Returns
    /// whether a capture happened.
    ///
    /// ```
    /// # fn main() -> Result<(), kernel_runtime::Error> {
    /// let stream = kernel_runtime::Device::emulator().stream()?;
    /// let mut graphs = kernel_runtime::GraphCache::new();
    /// assert!(graphs.run(&stream, 7u32, |_s| Ok(()))?);
    /// # Ok(()) }
    /// ```
    pub fn run(
        &mut self,
        stream: &Stream,
        key: K,
        record: impl FnOnce(&Stream) -> Result<()>,
    ) -> Result<bool> {
        let (graph, captured) = match self.graphs.entry(key) {
            Entry::Occupied(o) => (o.into_mut(), false),
            Entry::Vacant(v) => (v.insert(stream.capture(record)?), true),
        };
        graph.replay()?;
        Ok(captured)
    }

    /// The graph captured for `key`, if any.
    ///
    /// ```
    /// assert!(kernel_runtime::GraphCache::<u8>::new().get(&0).is_none());
    /// ```
    pub fn get(&self, key: &K) -> Option<&Graph> {
        self.graphs.get(key)
    }

    /// Number of graphs held.
    ///
    /// ```
    /// assert_eq!(kernel_runtime::GraphCache::<u8>::new().len(), 0);
    /// ```
    pub fn len(&self) -> usize {
        self.graphs.len()
    }

    /// True when no graph is held.
    ///
    /// ```
    /// assert!(kernel_runtime::GraphCache::<u8>::new().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.graphs.is_empty()
    }

    /// Drops every graph (and with them their hold on buffers).
    ///
    /// ```
    /// let mut cache = kernel_runtime::GraphCache::<u8>::new();
    /// cache.clear();
    /// ```
    pub fn clear(&mut self) {
        self.graphs.clear();
    }
}
