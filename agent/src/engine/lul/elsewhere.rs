//! `latency_under_load` and the probe flow beside `tcp_stream` and
//! `udp_rr` off Linux: not there (their probes' receive is Linux's batched
//! recvmmsg with kernel timestamps). `probe_ms` is refused before any
//! traffic ([`crate::platform::linux_only`]); these are the names the
//! kinds that carry a probe flow compile against, and none of them is
//! ever reached.

pub mod beside {
    use crate::engine::peer::Line;
    use crate::engine::{EngineEnv, Refusal, TestCtx, TestError};
    use meshperf_protocol::msg::ErrorCode;
    use meshperf_protocol::params::{LulPhase, ProbeParams};
    use meshperf_protocol::summary::LulSummary;
    use std::net::{IpAddr, UdpSocket};

    fn refused() -> String {
        crate::platform::needs_linux(
            "probe_ms",
            "the probe flow's batched receive and kernel timestamps",
        )
    }

    /// Refuses (see the module).
    pub fn open(_env: &EngineEnv, _ip: IpAddr) -> Result<UdpSocket, Refusal> {
        Err((ErrorCode::BadParams, refused()))
    }

    pub fn max_probes(_pp: &ProbeParams, _duration_s: Option<f64>, _ctx: &TestCtx) -> u64 {
        0
    }

    /// A probe flow by role: none can exist here.
    pub enum Probe {
        Serving(Serving),
        Driving(Driving),
    }
    pub enum Serving {}
    pub enum Driving {}

    impl Probe {
        fn never(&self) -> ! {
            match self {
                Probe::Serving(s) => match *s {},
                Probe::Driving(d) => match *d {},
            }
        }
    }

    impl Probe {
        pub fn load(&mut self, _phase: LulPhase) {
            self.never()
        }

        pub fn unload(&mut self) {
            self.never()
        }

        pub fn finish(
            self,
            _ctx: &TestCtx,
            _line: &mut Line,
            _streams: u32,
            _down: (u64, f64),
            _up: (u64, f64),
        ) -> Result<Option<LulSummary>, TestError> {
            self.never()
        }
    }

    /// Refuses (see the module).
    pub fn serve(
        _ctx: &TestCtx,
        _line: &mut Line,
        _sock: UdpSocket,
        _peer_ip: IpAddr,
        _pp: &ProbeParams,
        _max_probes: u64,
    ) -> Result<Serving, TestError> {
        Err(TestError::new(ErrorCode::BadParams, refused()))
    }

    /// Refuses (see the module).
    pub fn drive(
        _ctx: &TestCtx,
        _line: &mut Line,
        _peer_ip: IpAddr,
        _pp: &ProbeParams,
        _max_probes: u64,
    ) -> Result<Driving, TestError> {
        Err(TestError::new(ErrorCode::BadParams, refused()))
    }
}
