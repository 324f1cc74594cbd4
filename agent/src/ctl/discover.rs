//! Agents found by DNS: `--agent dns:NAME[:PORT][#token=T]` stands for an
//! agent at every address NAME resolves to (A and AAAA records, through the
//! system resolver: a Kubernetes headless Service lists its pods that way).
//! The port defaults to 7800 and the token to `--token-file`'s, else
//! `$MESHPERF_TOKEN` (agents of one deployment share it, e.g. from a
//! Secret).

use super::client::{AgentUrl, CtlError};

/// The default control port of an agent.
pub const DEFAULT_PORT: u16 = 7800;

/// The agents `arg` names: one for a URL as an agent prints it, one per
/// address for `dns:NAME[:PORT]`, in address order (IPv4 first).
/// (`meshperf run` and `monitor` call [`agents_with`]; this stays for
/// callers with no `--token-file`.)
#[allow(dead_code)]
pub fn agents(arg: &str) -> Result<Vec<AgentUrl>, CtlError> {
    agents_with(arg, None)
}

/// [`agents`], with `token` (`--token-file`'s) for an agent given without
/// one, before `$MESHPERF_TOKEN`: a `dns:` name, or a URL with no `token=`.
pub fn agents_with(arg: &str, token: Option<&str>) -> Result<Vec<AgentUrl>, CtlError> {
    agents_within(arg, token, crate::dns::DEFAULT_MAX_ADDRESSES)
}

/// [`agents_with`], a `dns:` name refused when it has more than `max`
/// addresses (`--max-resolve`).
pub fn agents_within(
    arg: &str,
    token: Option<&str>,
    max: usize,
) -> Result<Vec<AgentUrl>, CtlError> {
    let Some(rest) = arg.strip_prefix("dns:") else {
        return match token {
            Some(t) if !arg.contains("token=") => {
                let sep = if arg.contains('#') { "&" } else { "#" };
                // A bad URL is reported as given, without the file's token.
                AgentUrl::parse(&format!("{arg}{sep}token={t}")).or_else(|_| AgentUrl::parse(arg))
            }
            _ => AgentUrl::parse(arg),
        }
        .map(|u| vec![u]);
    };
    let usage = |m: String| CtlError::Usage(format!("--agent {arg}: {m}"));
    let (name_port, frag) = rest.split_once('#').unwrap_or((rest, ""));
    let token = frag
        .split('&')
        .find_map(|kv| kv.strip_prefix("token="))
        .map(str::to_string)
        .or_else(|| token.map(str::to_string))
        .or_else(|| std::env::var("MESHPERF_TOKEN").ok())
        .filter(|t| !t.is_empty())
        .ok_or_else(|| {
            usage("no token: add #token=T, give --token-file PATH or set MESHPERF_TOKEN".into())
        })?;
    let (name, port) = match name_port.rsplit_once(':') {
        Some((n, p)) if !n.contains(':') || n.starts_with('[') => (
            n.trim_start_matches('[').trim_end_matches(']'),
            p.parse::<u16>()
                .map_err(|_| usage(format!("{p:?} is not a port")))?,
        ),
        _ => (name_port, DEFAULT_PORT),
    };
    if name.is_empty() {
        return Err(usage(
            "expected dns:NAME[:PORT], e.g. dns:meshperf.monitoring.svc:7800".into(),
        ));
    }
    let ips = crate::dns::addresses(name, max).map_err(|e| match e {
        e if crate::dns::check_name(name).is_err() => usage(e),
        e => CtlError::Io(format!("--agent {arg}: {e}")),
    })?;
    // `#tls`: the agents speak https with a certificate that names NAME
    // (a Kubernetes Service's name), checked against the trusted roots.
    let tls = frag.split('&').any(|kv| kv == "tls");
    Ok(ips
        .into_iter()
        .map(|ip| AgentUrl {
            host: ip.to_string(),
            port,
            token: token.clone(),
            fp: None,
            verify_name: tls.then(|| name.to_string()),
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_becomes_an_agent_per_address() {
        let a = agents("dns:localhost:9#token=tok").unwrap();
        assert!(a.iter().any(|u| u.host == "127.0.0.1"), "{a:?}");
        assert!(a.iter().all(|u| u.port == 9 && u.token == "tok"));
        let hosts: Vec<&str> = a.iter().map(|u| u.host.as_str()).collect();
        let mut sorted = hosts.clone();
        sorted.dedup();
        assert_eq!(hosts, sorted, "each address once");
        let d = agents("dns:127.0.0.1#token=t").unwrap();
        assert_eq!((d[0].host.as_str(), d[0].port), ("127.0.0.1", DEFAULT_PORT));
        assert!(matches!(agents("dns::80#token=t"), Err(CtlError::Usage(_))));
        assert!(matches!(
            agents("dns:localhost:http#token=t"),
            Err(CtlError::Usage(_))
        ));
        assert!(matches!(
            agents("dns:no-such-host.invalid#token=t"),
            Err(CtlError::Io(_))
        ));
        assert_eq!(agents("http://h:1/#token=x").unwrap().len(), 1);
        // --token-file's token: for a name or a URL without one, not over one.
        let f = agents_with("dns:127.0.0.1:9", Some("file")).unwrap();
        assert_eq!(f[0].token, "file");
        assert_eq!(
            agents_with("dns:127.0.0.1#token=own", Some("file")).unwrap()[0].token,
            "own"
        );
        assert_eq!(
            agents_with("http://h:1/", Some("file")).unwrap()[0].token,
            "file"
        );
        assert_eq!(
            agents_with("http://h:1/#token=own", Some("file")).unwrap()[0].token,
            "own"
        );
        assert!(matches!(agents("http://h:1/"), Err(CtlError::Usage(_))));
    }
}
