//! The headings of the seeds' records that a summary's `line` carries:
//! a request/response requester's is tcp_req's and udp_req_timo's record
//! (seed 004), a udp_stream's udp_bw_mon's quiet-mode record (`-q`). One
//! home for both readers: `meshperf run` prints the heading above the
//! records (agent/src/run/seedtext.rs), and the page shows it above a
//! side's line (exported into web/src/lib/generated/params.ts), so a row
//! of `;`-separated numbers never appears without its names.

use crate::params::Kind;

/// udp_req_timo's and tcp_req's heading (seed 004), above the records of
/// every request/response kind.
pub const RR_HEADING: &str = "response len bytes; Req len; msg_count; loop_count; num_bad; time/frame us; Mbytes/s; ave time; min time; max time; num timeouts";

/// The names of udp_bw_mon's quiet-mode record (`-q`), as the seed lists
/// its elements: the heading of udp_stream's `--quiet` records and of its
/// summaries' `line`.
pub const UDP_BW_MON_QUIET_HEADING: &str = "time of day; sending_ip_address; dest_ip_address; pkt_len; loop_count; num_timeout_zero; num_timeout; Send_time_per_frame; wait_time; Send_total_send_time; Send_data_rate; num_recv; num_lost; num_badorder; Recv_total_time; Recv_time_per_frame; Recv_data_rate; Recv_wire_rate; num_in_hist; mean; sigma; skew; kurtosis; median; iq25; iq75";

/// The heading of the seed record a summary of `kind` may carry as its
/// `line`; None for kinds whose line is prose. A line is that record when
/// it has as many `; `-separated fields as the heading names (a responder's
/// line, "answered 10 requests ...", is prose).
pub fn heading(kind: Kind) -> Option<&'static str> {
    match kind {
        Kind::TcpRr | Kind::UdpRr | Kind::UnixRr => Some(RR_HEADING),
        Kind::UdpStream => Some(UDP_BW_MON_QUIET_HEADING),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headings_name_every_field_of_their_records() {
        assert_eq!(RR_HEADING.split("; ").count(), 11);
        assert_eq!(UDP_BW_MON_QUIET_HEADING.split("; ").count(), 26);
        assert_eq!(heading(Kind::UnixRr), Some(RR_HEADING));
        assert_eq!(heading(Kind::TcpStream), None);
    }
}
