//! The agent's integration tests, in one binary (as ripgrep keeps its own):
//! real `meshperf` processes moving real bytes over real sockets, driven
//! through the control protocol (`util`) or through `meshperf run`. One
//! binary builds and links once; `cargo test --test integration NAME`
//! filters as before. The network-namespace ground truth (`../netns.rs`)
//! is a binary of its own: it needs root and runs from tests/netns/run.sh.

mod util;

mod agent;
mod cluster;
mod cpu;
mod crr;
mod figures;
mod fleet;
mod gate;
mod iperf3;
mod iperf3_serve;
mod limits;
mod lul;
mod mesh;
mod monitor;
mod path;
mod rate;
mod run;
mod runctl;
mod safety;
mod scale;
mod seedopts;
mod share;
mod soak;
mod stamp;
mod tcp;
mod tls;
mod udp;
mod versions;
mod zerocopy;
