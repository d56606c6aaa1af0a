//! Training and inference ops written with ptxkit.
