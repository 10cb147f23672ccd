//! Capture filters: the part of tcpdump's filter language that selects UDP datagrams.
//!
//! `jitterlab import --filter "udp port 5004"` keeps the datagrams an expression accepts.
//! Primitives: `udp`, `tcp`, `ip`, `ip6`, `[src|dst] host ADDR`, `[src|dst] net ADDR/LEN`,
//! `[src|dst] port N`, `[src|dst] portrange N-M`, optionally after a protocol (`udp port 5004`),
//! combined with `and`/`&&`, `or`/`||`, `not`/`!` and parentheses. Only UDP is imported, so
//! `udp` is always true and `tcp` never.
//!
//! ```
//! use jitterlab_capture::filter::Filter;
//! let f = Filter::parse("udp port 5004 and not src host 10.0.0.9")?;
//! let a = "10.0.0.1:5004".parse().unwrap();
//! let b = "10.0.0.2:40000".parse().unwrap();
//! assert!(f.matches(a, b));
//! assert!(!f.matches("10.0.0.9:5004".parse().unwrap(), b));
//! # Ok::<(), jitterlab_capture::Error>(())
//! ```

use std::fmt;
use std::net::{IpAddr, SocketAddr};

use crate::Error;

/// Which end of the datagram a primitive looks at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Dir {
    Src,
    Dst,
    Either,
}

/// One test.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Test {
    Always(bool),
    V4,
    V6,
    Host(Dir, IpAddr),
    Net(Dir, IpAddr, u8),
    Ports(Dir, u16, u16),
}

/// A parsed filter expression.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Filter(Node);

#[derive(Clone, Debug, PartialEq, Eq)]
enum Node {
    Test(Test),
    And(Box<Self>, Box<Self>),
    Or(Box<Self>, Box<Self>),
    Not(Box<Self>),
}

impl Filter {
    /// Parses an expression.
    ///
    /// # Errors
    /// [`Error::Filter`] naming the word that does not fit.
    pub fn parse(text: &str) -> Result<Self, Error> {
        let tokens = tokenize(text);
        if tokens.is_empty() {
            return Err(invalid(text, "the expression is empty"));
        }
        let mut p = Parser {
            text,
            tokens,
            pos: 0,
        };
        let f = p.or()?;
        if let Some(t) = p.peek() {
            return Err(invalid(text, &format!("unexpected '{t}'")));
        }
        Ok(Self(f))
    }

    /// Whether a datagram from `src` to `dst` passes.
    pub fn matches(&self, src: SocketAddr, dst: SocketAddr) -> bool {
        self.0.matches(src, dst)
    }
}

impl Node {
    fn matches(&self, src: SocketAddr, dst: SocketAddr) -> bool {
        match self {
            Self::Test(t) => t.matches(src, dst),
            Self::And(a, b) => a.matches(src, dst) && b.matches(src, dst),
            Self::Or(a, b) => a.matches(src, dst) || b.matches(src, dst),
            Self::Not(a) => !a.matches(src, dst),
        }
    }
}

impl Test {
    fn matches(&self, src: SocketAddr, dst: SocketAddr) -> bool {
        let either = |dir: Dir, f: &dyn Fn(SocketAddr) -> bool| match dir {
            Dir::Src => f(src),
            Dir::Dst => f(dst),
            Dir::Either => f(src) || f(dst),
        };
        match *self {
            Self::Always(b) => b,
            Self::V4 => src.is_ipv4(),
            Self::V6 => src.is_ipv6(),
            Self::Host(dir, ip) => either(dir, &|a| a.ip() == ip),
            Self::Net(dir, net, len) => either(dir, &|a| in_net(a.ip(), net, len)),
            Self::Ports(dir, lo, hi) => either(dir, &|a| (lo..=hi).contains(&a.port())),
        }
    }
}

fn in_net(ip: IpAddr, net: IpAddr, len: u8) -> bool {
    match (ip, net) {
        (IpAddr::V4(a), IpAddr::V4(n)) => {
            let mask = u32::MAX.checked_shl(32 - u32::from(len)).unwrap_or(0);
            u32::from(a) & mask == u32::from(n) & mask
        }
        (IpAddr::V6(a), IpAddr::V6(n)) => {
            let mask = u128::MAX.checked_shl(128 - u32::from(len)).unwrap_or(0);
            u128::from(a) & mask == u128::from(n) & mask
        }
        _ => false,
    }
}

fn invalid(text: &str, why: &str) -> Error {
    Error::Filter {
        text: text.to_owned(),
        reason: why.to_owned(),
    }
}

fn tokenize(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        let single = matches!(c, '(' | ')' | '!');
        let double = matches!((c, chars.peek()), ('&', Some('&')) | ('|', Some('|')));
        if c.is_whitespace() || single || double {
            if !word.is_empty() {
                out.push(std::mem::take(&mut word));
            }
            if single {
                out.push(c.to_string());
            } else if double {
                chars.next();
                out.push(if c == '&' { "and" } else { "or" }.to_owned());
            }
        } else {
            word.push(c);
        }
    }
    if !word.is_empty() {
        out.push(word);
    }
    out
}

struct Parser<'a> {
    text: &'a str,
    tokens: Vec<String>,
    pos: usize,
}

impl fmt::Debug for Parser<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Parser").field("pos", &self.pos).finish()
    }
}

impl Parser<'_> {
    fn peek(&self) -> Option<&str> {
        self.tokens.get(self.pos).map(String::as_str)
    }

    fn next(&mut self) -> Option<String> {
        let t = self.tokens.get(self.pos).cloned();
        self.pos += 1;
        t
    }

    fn or(&mut self) -> Result<Node, Error> {
        let mut left = self.and()?;
        while self.peek() == Some("or") {
            self.pos += 1;
            left = Node::Or(Box::new(left), Box::new(self.and()?));
        }
        Ok(left)
    }

    fn and(&mut self) -> Result<Node, Error> {
        let mut left = self.not()?;
        while self.peek() == Some("and") {
            self.pos += 1;
            left = Node::And(Box::new(left), Box::new(self.not()?));
        }
        Ok(left)
    }

    fn not(&mut self) -> Result<Node, Error> {
        if matches!(self.peek(), Some("not" | "!")) {
            self.pos += 1;
            return Ok(Node::Not(Box::new(self.not()?)));
        }
        self.primary()
    }

    fn primary(&mut self) -> Result<Node, Error> {
        let Some(tok) = self.next() else {
            return Err(invalid(self.text, "the expression ends too early"));
        };
        if tok == "(" {
            let inner = self.or()?;
            if self.next().as_deref() != Some(")") {
                return Err(invalid(self.text, "missing ')'"));
            }
            return Ok(inner);
        }
        let proto = match tok.as_str() {
            "udp" => Some(Test::Always(true)),
            "tcp" | "icmp" | "icmp6" | "arp" => Some(Test::Always(false)),
            "ip" => Some(Test::V4),
            "ip6" => Some(Test::V6),
            _ => None,
        };
        let Some(proto) = proto else {
            self.pos -= 1;
            return self.qualified();
        };
        if matches!(
            self.peek(),
            Some("src" | "dst" | "host" | "net" | "port" | "portrange")
        ) {
            let rest = self.qualified()?;
            return Ok(Node::And(Box::new(Node::Test(proto)), Box::new(rest)));
        }
        Ok(Node::Test(proto))
    }

    fn qualified(&mut self) -> Result<Node, Error> {
        let text = self.text;
        let mut kind = self.next().unwrap_or_default();
        let dir = match kind.as_str() {
            "src" => Dir::Src,
            "dst" => Dir::Dst,
            _ => Dir::Either,
        };
        if dir != Dir::Either {
            kind = self.next().unwrap_or_default();
        }
        let value = self
            .next()
            .ok_or_else(|| invalid(text, &format!("'{kind}' needs a value")))?;
        let test = match kind.as_str() {
            "host" => Test::Host(
                dir,
                value
                    .parse()
                    .map_err(|_| invalid(text, &format!("'{value}' is not an IP address")))?,
            ),
            "net" => {
                let (addr, len) = value.split_once('/').unwrap_or((&value, ""));
                let ip: IpAddr = addr
                    .parse()
                    .map_err(|_| invalid(text, &format!("'{value}' is not a network")))?;
                let max = if ip.is_ipv4() { 32 } else { 128 };
                let len = if len.is_empty() {
                    max
                } else {
                    len.parse::<u8>()
                        .ok()
                        .filter(|l| *l <= max)
                        .ok_or_else(|| invalid(text, &format!("bad prefix length in '{value}'")))?
                };
                Test::Net(dir, ip, len)
            }
            "port" => {
                let p = port(text, &value)?;
                Test::Ports(dir, p, p)
            }
            "portrange" => {
                let (lo, hi) = value
                    .split_once('-')
                    .ok_or_else(|| invalid(text, &format!("portrange '{value}' is not N-M")))?;
                let (lo, hi) = (port(text, lo)?, port(text, hi)?);
                if lo > hi {
                    return Err(invalid(text, &format!("portrange '{value}' is empty")));
                }
                Test::Ports(dir, lo, hi)
            }
            other => {
                return Err(invalid(
                    text,
                    &format!(
                        "unknown word '{other}' (known: udp, ip, ip6, host, net, port, \
                         portrange, src, dst, and, or, not)"
                    ),
                ));
            }
        };
        Ok(Node::Test(test))
    }
}

fn port(text: &str, value: &str) -> Result<u16, Error> {
    value
        .parse()
        .map_err(|_| invalid(text, &format!("'{value}' is not a port number (0..=65535)")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(f: &str, src: &str, dst: &str) -> bool {
        Filter::parse(f)
            .unwrap()
            .matches(src.parse().unwrap(), dst.parse().unwrap())
    }

    #[test]
    fn primitives_and_combinations() {
        let (a, b) = ("10.0.0.1:5004", "192.168.1.2:40000");
        assert!(m("udp port 5004", a, b));
        assert!(m("port 40000", a, b));
        assert!(!m("src port 40000", a, b));
        assert!(m("dst port 40000", a, b));
        assert!(!m("tcp", a, b));
        assert!(m("ip and not ip6", a, b));
        assert!(m("net 192.168.0.0/16", a, b));
        assert!(!m("src net 192.168.0.0/16", a, b));
        assert!(m("portrange 5000-5010 && host 10.0.0.1", a, b));
        assert!(m("(port 1 or port 2) || !udp or port 5004", a, b));
        assert!(!m("not (port 1 or port 5004)", a, b));
        assert!(m("ip6 or host 10.0.0.1", a, b));
        assert!(m("host ::1", "[::1]:1", "[::2]:2"));
    }

    #[test]
    fn bad_expressions_name_the_problem() {
        for (f, needle) in [
            ("", "empty"),
            ("port", "needs a value"),
            ("port 70000", "not a port"),
            ("udp prot 5", "unexpected 'prot'"),
            ("prot 5", "unknown word 'prot'"),
            ("(port 5", "missing ')'"),
            ("port 5 port 6", "unexpected 'port'"),
            ("net 10.0.0.0/33", "prefix length"),
            ("portrange 9-3", "empty"),
        ] {
            let err = Filter::parse(f).unwrap_err().to_string();
            assert!(err.contains(needle), "{f}: {err}");
        }
    }
}
