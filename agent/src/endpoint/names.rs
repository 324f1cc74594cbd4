//! The names a server answers to: what a `Host` header may name (DNS
//! rebinding: a page from a name that now points here reaches nothing).

use crate::sysinfo;
use std::net::IpAddr;

/// The host part of a `Host` header value or a name, as compared: lowercase,
/// without port, brackets or a trailing dot; addresses in their usual form.
/// A bracketed address followed by anything but `:PORT` is kept whole
/// (lowercase), so it is no address and names nothing of the agent's.
pub fn host_key(h: &str) -> String {
    let h = h.trim();
    let name = if let Some(rest) = h.strip_prefix('[') {
        // `[addr]` or `[addr]:port`, nothing else after the `]`
        // (`[::1]@evil.example` names no address of ours).
        match rest.split_once(']') {
            Some((addr, "")) => addr,
            Some((addr, port))
                if port.len() > 1
                    && port.starts_with(':')
                    && port[1..].bytes().all(|b| b.is_ascii_digit()) =>
            {
                addr
            }
            _ => return h.to_ascii_lowercase(),
        }
    } else {
        match h.rsplit_once(':') {
            Some((n, port)) if !n.contains(':') && port.bytes().all(|b| b.is_ascii_digit()) => n,
            _ => h,
        }
    };
    match name.parse::<IpAddr>() {
        Ok(ip) => ip.to_canonical().to_string(),
        Err(_) => name.trim_end_matches('.').to_ascii_lowercase(),
    }
}

/// The names a server bound to `listen` answers to, as [`host_key`]s:
/// its address, the host name, localhost when bound to loopback or any,
/// every interface address when bound to any, and `extra` (`--allow-host`).
/// What the `Host` of a WebSocket upgrade (see `serve::server::Guard`) or
/// of an endpoint's request may name.
pub fn own_names(listen: IpAddr, extra: &[String]) -> Vec<String> {
    let mut names = vec![listen.to_string(), sysinfo::hostname()];
    if listen.is_loopback() || listen.is_unspecified() {
        names.extend(["localhost", "127.0.0.1", "::1"].map(String::from));
    }
    if listen.is_unspecified() {
        names.extend(
            sysinfo::addresses()
                .into_iter()
                .map(|(_, ip)| ip.to_string()),
        );
    }
    names.extend(extra.iter().cloned());
    names.iter().map(|n| host_key(n)).collect()
}
