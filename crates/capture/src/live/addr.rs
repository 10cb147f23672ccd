//! Network addresses as users write them: `HOST:PORT` with a host name or an IP literal
//! (`[::1]:5004` for IPv6), or a port alone for loopback.

use std::io;
use std::net::{SocketAddr, ToSocketAddrs};

use crate::Error;

/// Resolves `text` to one socket address: a port alone is `127.0.0.1:PORT` (loopback unless
/// told otherwise); an IP literal is taken as it is; a host name is looked up (the system
/// resolver: `/etc/hosts`, DNS) and its first IPv4 address taken, else its first address, so
/// that `localhost:PORT` reaches a server bound to `127.0.0.1` or `0.0.0.0`.
///
/// # Errors
/// [`Error::Address`] for text that is not `HOST:PORT` or a port; [`Error::Resolve`] naming the
/// host when it does not resolve.
pub fn resolve(text: &str) -> Result<SocketAddr, Error> {
    let trimmed = text.trim();
    if let Ok(port) = trimmed.parse::<u16>() {
        return Ok(SocketAddr::from(([127, 0, 0, 1], port)));
    }
    if let Ok(addr) = trimmed.parse::<SocketAddr>() {
        return Ok(addr);
    }
    let address = || Error::Address {
        text: text.to_owned(),
    };
    let (host, port) = trimmed.rsplit_once(':').ok_or_else(address)?;
    let port: u16 = port.parse().map_err(|_| address())?;
    // An IPv6 literal needs its brackets: `::1:5004` is not a host and a port.
    if host.is_empty() || host.contains(':') {
        return Err(address());
    }
    let resolve = |source| Error::Resolve {
        host: host.to_owned(),
        source,
    };
    let addrs: Vec<SocketAddr> = (host, port).to_socket_addrs().map_err(resolve)?.collect();
    addrs
        .iter()
        .find(|a| a.is_ipv4())
        .or_else(|| addrs.first())
        .copied()
        .ok_or_else(|| {
            resolve(io::Error::new(
                io::ErrorKind::NotFound,
                "the name has no address",
            ))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A bare port listens on loopback only; literals are kept; names are looked up.
    #[test]
    fn ports_literals_and_names() {
        let r = |t: &str| resolve(t).unwrap().to_string();
        assert_eq!(r("5004"), "127.0.0.1:5004");
        assert_eq!(r("0.0.0.0:5004"), "0.0.0.0:5004");
        assert_eq!(r("[::1]:5004"), "[::1]:5004");
        assert_eq!(r("localhost:5004"), "127.0.0.1:5004");
        for bad in [
            "example.org",
            "host:port",
            ":5004",
            "::1:5004",
            "host:70000",
            "",
        ] {
            let err = resolve(bad).unwrap_err().to_string();
            assert_eq!(err, format!("'{bad}': expected HOST:PORT or PORT"), "{bad}");
        }
    }

    /// A name that does not resolve is an error naming the host (`.invalid` never resolves,
    /// RFC 2606; the lookup fails without a network too).
    #[test]
    fn an_unknown_host_is_named() {
        let err = resolve("no-such-host.invalid:7777").unwrap_err();
        assert!(matches!(err, Error::Resolve { .. }), "{err:?}");
        let text = err.to_string();
        assert!(
            text.starts_with("cannot resolve host 'no-such-host.invalid': "),
            "{text}"
        );
    }
}
