//! A trace file whatever its form: the text forms ([`super::import`]), trace-cmd's binary
//! trace.dat ([`super::tracedat`]), or either gzip- or zstd-compressed, told apart by their
//! first bytes. Above both readers, so that neither needs the other's entry point.

use super::import::{self, MAX_DECOMPRESSED};
use super::Trace;

/// The gzip magic.
const GZIP: [u8; 2] = [0x1f, 0x8b];
/// The zstd frame magic (RFC 8878).
const ZSTD: [u8; 4] = [0x28, 0xb5, 0x2f, 0xfd];

/// Reads a trace file, naming the file in errors: any of the text forms, trace-cmd's binary
/// trace.dat (see [`super::tracedat`]), or either of them gzip- or zstd-compressed.
pub fn load(path: &std::path::Path) -> Result<Trace, String> {
    let bytes = crate::infile::read(path, crate::infile::MAX_TRACE_INPUT, "trace")
        .map_err(|e| format!("cannot read trace {}: {e}", path.display()))?;
    parse_bytes(&bytes).map_err(|e| format!("trace {}: {e}", path.display()))
}

/// Reads a trace from its bytes, whatever its form: text, trace.dat, or a gzip or zstd of
/// either.
pub fn parse_bytes(bytes: &[u8]) -> Result<Trace, String> {
    let (inner, how) = if bytes.starts_with(&GZIP) {
        (gunzip(bytes, MAX_DECOMPRESSED)?, "gzip")
    } else if bytes.starts_with(&ZSTD) {
        (unzstd(bytes, MAX_DECOMPRESSED)?, "zstd")
    } else {
        return parse_plain(bytes);
    };
    if inner.starts_with(&GZIP) || inner.starts_with(&ZSTD) {
        return Err(format!(
            "compressed twice ({how}, then again inside); unpack it once"
        ));
    }
    parse_plain(&inner).map_err(|e| format!("({how}-compressed) {e}"))
}

fn parse_plain(bytes: &[u8]) -> Result<Trace, String> {
    if bytes.starts_with(&super::tracedat::MAGIC) {
        return super::tracedat::parse(bytes).map_err(|e| format!("trace.dat: {e}"));
    }
    if bytes.starts_with(b"PERFILE2") {
        return Err(
            "a binary perf.data; convert it with `perf sched script -i FILE > trace.txt`".into(),
        );
    }
    let text = String::from_utf8_lossy(bytes);
    import::parse(&text).map_err(|e| e.to_string())
}

/// A gzip stream (one member or several, as `cat a.gz b.gz` makes) unpacked, refused past
/// `limit` bytes.
pub fn gunzip(bytes: &[u8], limit: u64) -> Result<Vec<u8>, String> {
    use std::io::Read;
    let mut out = Vec::new();
    flate2::read::MultiGzDecoder::new(bytes)
        .take(limit.saturating_add(1))
        .read_to_end(&mut out)
        .map_err(|e| format!("not a readable gzip stream: {e}"))?;
    if out.len() as u64 > limit {
        return Err(format!(
            "gzip stream unpacks to more than {} GiB, the limit on a trace",
            limit >> 30
        ));
    }
    Ok(out)
}

/// A zstd stream (one frame or several, as `cat a.zst b.zst` makes) unpacked, refused past
/// `limit` bytes.
pub fn unzstd(bytes: &[u8], limit: u64) -> Result<Vec<u8>, String> {
    use std::io::Read;
    let mut out = Vec::new();
    let mut rest: &[u8] = bytes;
    while !rest.is_empty() {
        let room = limit.saturating_add(1).saturating_sub(out.len() as u64);
        let mut frame = ruzstd::decoding::StreamingDecoder::new(&mut rest)
            .map_err(|e| format!("not a readable zstd stream: {e}"))?;
        (&mut frame)
            .take(room)
            .read_to_end(&mut out)
            .map_err(|e| format!("not a readable zstd stream: {e}"))?;
        if out.len() as u64 > limit {
            return Err(format!(
                "zstd stream unpacks to more than {} GiB, the limit on a trace",
                limit >> 30
            ));
        }
    }
    Ok(out)
}
