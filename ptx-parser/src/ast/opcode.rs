//! Instruction opcodes. Compound opcodes (`cp.async`, `wgmma.mma_async`) are one variant; the
//! words after the opcode are [`Modifier`](super::Modifier)s.

macro_rules! opcodes {
    ($($variant:ident => $word:literal,)*) => {
        /// An instruction's opcode: a known PTX operation, or [`Opcode::Other`] with the word as
        /// written for operations this crate does not name.
        ///
        /// ```
        /// use ptx_parser::Opcode;
        /// assert_eq!(Opcode::from_word("cp.async"), Opcode::CpAsync);
        /// assert_eq!(Opcode::from_word("frobnicate"), Opcode::Other("frobnicate".into()));
        /// assert_eq!(Opcode::Fma.as_str(), "fma");
        /// ```
        #[derive(Clone, Debug, PartialEq, Eq, Hash)]
        pub enum Opcode {
            $(#[doc = concat!("`", $word, "`")] $variant,)*
            /// An opcode this crate does not know: its first word as written; the dotted words after
            /// it are modifiers.
            Other(String),
        }

        impl Opcode {
            /// Every known opcode word, in declaration order.
            pub const KNOWN: &'static [&'static str] = &[$($word,)*];

            /// The opcode as written in PTX.
            pub fn as_str(&self) -> &str {
                match self {
                    $(Opcode::$variant => $word,)*
                    Opcode::Other(word) => word,
                }
            }

            /// The opcode written as `word`; unknown words become [`Opcode::Other`].
            pub fn from_word(word: &str) -> Opcode {
                match word {
                    $($word => Opcode::$variant,)*
                    other => Opcode::Other(other.to_string()),
                }
            }

            /// Whether `word` names a known opcode.
            pub fn is_known(word: &str) -> bool {
                matches!(word, $($word)|*)
            }
        }
    };
}

opcodes! {
    Abs => "abs",
    Activemask => "activemask",
    Add => "add",
    Addc => "addc",
    And => "and",
    Atom => "atom",
    Bar => "bar",
    BarWarpSync => "bar.warp.sync",
    Barrier => "barrier",
    Bfe => "bfe",
    Bfi => "bfi",
    Bfind => "bfind",
    Bra => "bra",
    Brev => "brev",
    Brkpt => "brkpt",
    Brx => "brx",
    Call => "call",
    Clz => "clz",
    Cnot => "cnot",
    Copysign => "copysign",
    Cos => "cos",
    CpAsync => "cp.async",
    CpAsyncBulk => "cp.async.bulk",
    CpAsyncBulkTensor => "cp.async.bulk.tensor",
    CpAsyncBulkCommitGroup => "cp.async.bulk.commit_group",
    CpAsyncBulkWaitGroup => "cp.async.bulk.wait_group",
    CpAsyncCommitGroup => "cp.async.commit_group",
    CpAsyncWaitAll => "cp.async.wait_all",
    CpAsyncWaitGroup => "cp.async.wait_group",
    CpAsyncMbarrierArrive => "cp.async.mbarrier.arrive",
    CpReduceAsyncBulk => "cp.reduce.async.bulk",
    Cvt => "cvt",
    Cvta => "cvta",
    Div => "div",
    Dp2a => "dp2a",
    Dp4a => "dp4a",
    ElectSync => "elect.sync",
    Ex2 => "ex2",
    Exit => "exit",
    Fence => "fence",
    Fma => "fma",
    Fns => "fns",
    Griddepcontrol => "griddepcontrol",
    Isspacep => "isspacep",
    Ld => "ld",
    Ldmatrix => "ldmatrix",
    Ldu => "ldu",
    Lg2 => "lg2",
    Lop3 => "lop3",
    Mad => "mad",
    Mad24 => "mad24",
    Madc => "madc",
    Match => "match",
    Max => "max",
    MbarrierArrive => "mbarrier.arrive",
    MbarrierArriveDrop => "mbarrier.arrive_drop",
    MbarrierExpectTx => "mbarrier.expect_tx",
    MbarrierInit => "mbarrier.init",
    MbarrierInval => "mbarrier.inval",
    MbarrierTestWait => "mbarrier.test_wait",
    MbarrierTryWait => "mbarrier.try_wait",
    Membar => "membar",
    Min => "min",
    Mma => "mma",
    Mov => "mov",
    Mul => "mul",
    Mul24 => "mul24",
    Nanosleep => "nanosleep",
    Neg => "neg",
    Not => "not",
    Or => "or",
    Pmevent => "pmevent",
    Popc => "popc",
    Prefetch => "prefetch",
    Prefetchu => "prefetchu",
    Prmt => "prmt",
    Rcp => "rcp",
    Red => "red",
    Redux => "redux",
    Rem => "rem",
    Ret => "ret",
    Rsqrt => "rsqrt",
    Sad => "sad",
    Selp => "selp",
    Set => "set",
    Setmaxnreg => "setmaxnreg",
    Setp => "setp",
    Shf => "shf",
    Shfl => "shfl",
    Shl => "shl",
    Shr => "shr",
    Sin => "sin",
    Slct => "slct",
    Sqrt => "sqrt",
    St => "st",
    StAsync => "st.async",
    Stmatrix => "stmatrix",
    Sub => "sub",
    Subc => "subc",
    Suld => "suld",
    Sust => "sust",
    Tanh => "tanh",
    Testp => "testp",
    Tex => "tex",
    Tld4 => "tld4",
    Trap => "trap",
    Txq => "txq",
    Vote => "vote",
    WgmmaCommitGroup => "wgmma.commit_group",
    WgmmaFence => "wgmma.fence",
    WgmmaMmaAsync => "wgmma.mma_async",
    WgmmaWaitGroup => "wgmma.wait_group",
    Wmma => "wmma",
    WmmaLoad => "wmma.load",
    WmmaMma => "wmma.mma",
    WmmaStore => "wmma.store",
    Xor => "xor",
}

impl std::fmt::Display for Opcode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
