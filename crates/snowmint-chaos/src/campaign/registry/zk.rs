//! ZooKeeper: `/snowmint/<namespace>/dcD/wW` is an ephemeral node holding the holder's
//! name, gone with its session. Read with the two requests the reader needs
//! (`getChildren`, `getData`) of ZooKeeper's wire protocol.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use anyhow::{Context, ensure};

/// The session the reader asks for; polls every 100 ms keep it alive.
const SESSION_TIMEOUT_MS: i32 = 10_000;
const GET_DATA: i32 = 4;
const GET_CHILDREN: i32 = 8;

/// One session on one connection.
pub struct Session {
    stream: TcpStream,
    xid: i32,
}

impl Session {
    /// Connects to `addr` and opens a session.
    pub fn connect(addr: SocketAddr) -> anyhow::Result<Session> {
        let stream = TcpStream::connect_timeout(&addr, Duration::from_secs(1))?;
        stream.set_read_timeout(Some(Duration::from_secs(1)))?;
        stream.set_write_timeout(Some(Duration::from_secs(1)))?;
        let mut session = Session { stream, xid: 0 };
        let mut body = Vec::new();
        body.extend(0i32.to_be_bytes()); // protocol version
        body.extend(0i64.to_be_bytes()); // last zxid seen
        body.extend(SESSION_TIMEOUT_MS.to_be_bytes());
        body.extend(0i64.to_be_bytes()); // session id: a new one
        body.extend(16i32.to_be_bytes()); // password: 16 zero bytes
        body.extend([0u8; 16]);
        session.send(&body)?;
        let answer = session.frame()?;
        ensure!(answer.len() >= 16, "ZooKeeper refused the session");
        Ok(session)
    }

    fn send(&mut self, body: &[u8]) -> anyhow::Result<()> {
        let len = i32::try_from(body.len()).context("request too long")?;
        self.stream.write_all(&len.to_be_bytes())?;
        self.stream.write_all(body)?;
        Ok(())
    }

    fn frame(&mut self) -> anyhow::Result<Vec<u8>> {
        let mut len = [0u8; 4];
        self.stream.read_exact(&mut len)?;
        let len = usize::try_from(i32::from_be_bytes(len)).context("a negative length")?;
        ensure!(len <= 1 << 20, "a frame of {len} bytes");
        let mut frame = vec![0u8; len];
        self.stream.read_exact(&mut frame)?;
        Ok(frame)
    }

    /// Sends request `op` on `path` and returns its answer's body.
    fn call(&mut self, op: i32, path: &str) -> anyhow::Result<Option<Vec<u8>>> {
        self.xid += 1;
        let mut body = Vec::new();
        body.extend(self.xid.to_be_bytes());
        body.extend(op.to_be_bytes());
        put_string(&mut body, path);
        body.push(0); // no watch
        self.send(&body)?;
        loop {
            let frame = self.frame()?;
            ensure!(frame.len() >= 16, "a short answer");
            let xid = i32::from_be_bytes(frame[0..4].try_into()?);
            if xid != self.xid {
                continue; // a ping's answer or a notification
            }
            let err = i32::from_be_bytes(frame[12..16].try_into()?);
            // -101: no node (a worker released between the two requests).
            if err == -101 {
                return Ok(None);
            }
            ensure!(err == 0, "ZooKeeper error {err} on {path}");
            return Ok(Some(frame[16..].to_vec()));
        }
    }

    /// Every held worker of datacenter 0 of the default fleet, with its holder's pid.
    pub fn workers(&mut self) -> anyhow::Result<Vec<(u16, u32)>> {
        // The default fleet's namespace (snowmint_lease::Fleet::default().namespace()).
        let dc = "/snowmint/fleet.default/dc0";
        let Some(body) = self.call(GET_CHILDREN, dc)? else {
            return Ok(Vec::new());
        };
        let mut at = 0;
        let count = take_i32(&body, &mut at)?;
        let mut names = Vec::new();
        for _ in 0..count.max(0) {
            names.push(take_string(&body, &mut at)?);
        }
        let mut held = Vec::new();
        for name in names {
            let Some(worker) = name
                .strip_prefix('w')
                .filter(|w| w.bytes().all(|b| b.is_ascii_digit()))
                .and_then(|w| w.parse::<u16>().ok())
                .filter(|w| *w < 32)
            else {
                continue;
            };
            let Some(data) = self.call(GET_DATA, &format!("{dc}/{name}"))? else {
                continue;
            };
            let holder = take_string(&data, &mut 0)?;
            if let Some(pid) = holder.rsplit('/').nth(1).and_then(|p| p.parse().ok()) {
                held.push((worker, pid));
            }
        }
        Ok(held)
    }
}

fn put_string(out: &mut Vec<u8>, text: &str) {
    out.extend(i32::try_from(text.len()).unwrap_or(i32::MAX).to_be_bytes());
    out.extend(text.as_bytes());
}

fn take_i32(body: &[u8], at: &mut usize) -> anyhow::Result<i32> {
    let bytes = body.get(*at..*at + 4).context("a short answer")?;
    *at += 4;
    Ok(i32::from_be_bytes(bytes.try_into()?))
}

fn take_string(body: &[u8], at: &mut usize) -> anyhow::Result<String> {
    let len = usize::try_from(take_i32(body, at)?.max(0))?;
    let bytes = body.get(*at..*at + len).context("a short answer")?;
    *at += len;
    Ok(String::from_utf8_lossy(bytes).into_owned())
}
