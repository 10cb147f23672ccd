//! Opening an input — a file, or `-` for standard input — as one buffered stream, with gzip
//! and zstd decompression detected by their magic bytes.
//!
//! Every reader of the command line (traces, pcap, pcapng, CSV) opens its input through
//! [`Source::open`], so that each of them reads `capture.pcap.gz`, `trace.jtr.zst` and a pipe
//! (`tcpdump -U -w - | jitterlab import - -o x.jtr`) the same way it reads a plain file:
//!
//! - the compression is told by the first bytes (gzip `1f 8b`, zstd `28 b5 2f fd`), never by
//!   the name alone, so a `.gz` that is not compressed is read as it is and a compressed file
//!   without an extension is decompressed;
//! - the format of the (decompressed) data is sniffed from its first [`SNIFF_LEN`] bytes, kept
//!   in a buffer and read again by the format's reader, so that nothing needs to seek or read
//!   the input twice and standard input works like a file;
//! - concatenated gzip members (`pigz`, `cat a.gz b.gz`) and zstd frames (with skippable
//!   frames skipped) are read in turn, and gzip CRCs and zstd content checksums are checked;
//! - corrupt compressed data is an I/O error saying so ([`io::ErrorKind::InvalidData`]); a
//!   compressed stream that stops before its end (a truncated download, a killed `gzip`) is an
//!   error saying it is cut short, except in a jitterlab trace, whose reader already keeps
//!   every complete record of a file cut mid-record: there the data simply ends and
//!   [`Source::cut_short`] says so;
//! - a progress callback can follow the bytes read from the file itself (compressed bytes, so
//!   that a bar against [`Source::len`] ends at 100 %).
//!
//! The decoders are pure Rust (flate2 on miniz_oxide, ruzstd) and come with the `compress`
//! feature; without it a compressed input is refused with an error saying so.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Cursor, Read};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::Error;
use crate::format::{Format, SNIFF_LEN};

/// The path that means standard input (as an input) or standard output (as an output).
pub const STDIO: &str = "-";

/// Whether `path` is `-`, standard input or output.
pub fn is_stdio(path: impl AsRef<Path>) -> bool {
    path.as_ref().as_os_str() == STDIO
}

/// How an input is compressed, told by its first bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Compression {
    /// Not compressed (or compressed in a way jitterlab does not know).
    None,
    /// gzip (RFC 1952; magic `1f 8b`), one member or several concatenated.
    Gzip,
    /// Zstandard (RFC 8878; magic `28 b5 2f fd`), one frame or several.
    Zstd,
}

/// The gzip magic bytes.
const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];
/// The zstd frame magic number, as it appears in the file (little-endian 0xFD2FB528).
const ZSTD_MAGIC: [u8; 4] = [0x28, 0xb5, 0x2f, 0xfd];

impl Compression {
    /// The compression `head` (the first bytes of a file, four are enough) starts with.
    pub fn sniff(head: &[u8]) -> Self {
        if head.starts_with(&GZIP_MAGIC) {
            Self::Gzip
        } else if head.starts_with(&ZSTD_MAGIC) {
            Self::Zstd
        } else {
            Self::None
        }
    }

    /// The compression's name as messages print it (`gzip`, `zstd`, `none`).
    pub fn name(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::Gzip => "gzip",
            Self::Zstd => "zstd",
        }
    }

    /// Whether the data is compressed.
    pub fn is_compressed(self) -> bool {
        self != Self::None
    }
}

/// Called with the number of bytes read so far from the file itself (before decompression).
pub type Progress = Box<dyn FnMut(u64) + Send>;

/// An opened input: decompressed, buffered, with its format sniffed (see the module docs).
pub struct Source {
    name: String,
    compression: Compression,
    format: Option<Format>,
    len: Option<u64>,
    cut: Arc<AtomicBool>,
    inner: BufReader<Box<dyn Read + Send>>,
}

/// What a compressed stream that stops before its end does: shared between the decoder and
/// its [`Source`].
#[derive(Clone, Debug)]
struct Stop {
    /// End the data quietly at a cut (a trace, and while sniffing) instead of failing.
    tolerate: Arc<AtomicBool>,
    /// A cut was met and tolerated.
    cut: Arc<AtomicBool>,
}

impl Default for Stop {
    fn default() -> Self {
        Self {
            tolerate: Arc::new(AtomicBool::new(true)),
            cut: Arc::new(AtomicBool::new(false)),
        }
    }
}

/// The error of a compressed stream that stops before its end.
fn cut_error(compression: Compression) -> io::Error {
    io::Error::new(
        io::ErrorKind::UnexpectedEof,
        format!(
            "the {} data is cut short (the file is truncated)",
            compression.name()
        ),
    )
}

impl std::fmt::Debug for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Source")
            .field("name", &self.name)
            .field("compression", &self.compression)
            .field("format", &self.format)
            .field("len", &self.len)
            .finish_non_exhaustive()
    }
}

impl Source {
    /// Opens `path` (`-`: standard input), detecting its compression and format.
    ///
    /// # Errors
    /// [`Error::Input`] naming the path: it cannot be opened, or its first bytes cannot be
    /// read or decompressed.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, Error> {
        Self::open_with_progress(path, None)
    }

    /// As [`Source::open`], calling `progress` as bytes are read from the file (or pipe).
    ///
    /// # Errors
    /// As [`Source::open`].
    pub fn open_with_progress(
        path: impl AsRef<Path>,
        progress: Option<Progress>,
    ) -> Result<Self, Error> {
        let path = path.as_ref();
        if is_stdio(path) {
            return Self::from_reader("standard input", None, io::stdin(), progress);
        }
        let name = path.display().to_string();
        let file = File::open(path).map_err(|error| Error::Input {
            action: "open",
            path: name.clone(),
            error,
        })?;
        let len = file
            .metadata()
            .ok()
            .filter(std::fs::Metadata::is_file)
            .map(|m| m.len());
        Self::from_reader(name, len, file, progress)
    }

    /// Reads `input`, named `name` in errors, as [`Source::open`] reads a file; `len` is its
    /// size when known.
    ///
    /// # Errors
    /// As [`Source::open`].
    pub fn from_reader(
        name: impl Into<String>,
        len: Option<u64>,
        input: impl Read + Send + 'static,
        progress: Option<Progress>,
    ) -> Result<Self, Error> {
        let name = name.into();
        let read_error = |error| Error::Input {
            action: "read",
            path: name.clone(),
            error,
        };
        let eof = Arc::new(AtomicBool::new(false));
        let mut raw = Counted {
            inner: input,
            read: 0,
            eof: Arc::clone(&eof),
            progress,
        };
        let head = read_head(&mut raw, ZSTD_MAGIC.len()).map_err(read_error)?;
        let compression = Compression::sniff(&head);
        let raw = Cursor::new(head).chain(raw);
        let stop = Stop::default();
        let mut data: Box<dyn Read + Send> = match compression {
            Compression::None => Box::new(raw),
            compressed => decoder(compressed, raw, eof, stop.clone())?,
        };
        let head = read_head(&mut data, SNIFF_LEN).map_err(read_error)?;
        let format = Format::sniff(&head);
        // A trace cut inside its compression ends where the data ends: the trace reader keeps
        // every complete record, as for a plain file cut short. Anywhere else a cut stream is
        // an error, also when the cut came within the sniffed head.
        let tolerate = format == Some(Format::Trace);
        stop.tolerate.store(tolerate, Ordering::Relaxed);
        if !tolerate && stop.cut.load(Ordering::Relaxed) {
            return Err(read_error(cut_error(compression)));
        }
        let data: Box<dyn Read + Send> = Box::new(Cursor::new(head).chain(data));
        let source = Self {
            name,
            compression,
            format,
            len,
            cut: stop.cut,
            inner: BufReader::with_capacity(1 << 16, data),
        };
        Ok(source)
    }

    /// The name messages give the input: its path, or `standard input`.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// How the input is compressed.
    pub fn compression(&self) -> Compression {
        self.compression
    }

    /// The format of the (decompressed) data, from its first bytes; `None` for empty or
    /// unrecognised data.
    pub fn format(&self) -> Option<Format> {
        self.format
    }

    /// The size of the file on disk (compressed), when it is a regular file; `None` for a
    /// pipe or standard input.
    pub fn len(&self) -> Option<u64> {
        self.len
    }

    /// Whether the input is known to be empty (a regular file of zero bytes).
    pub fn is_empty(&self) -> bool {
        self.len == Some(0)
    }

    /// Whether a compressed trace stopped before the end of its compressed stream (the
    /// data read is every byte before the cut). Always `false` for other formats, where a cut
    /// stream is a read error instead.
    pub fn cut_short(&self) -> bool {
        self.cut.load(Ordering::Relaxed)
    }
}

impl Read for Source {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.inner.read(buf)
    }
}

impl BufRead for Source {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        self.inner.fill_buf()
    }

    fn consume(&mut self, amount: usize) {
        self.inner.consume(amount);
    }
}

/// Reads up to `n` bytes (fewer only at the end of the input): a pipe may deliver the first
/// bytes in several reads.
fn read_head(input: &mut impl Read, n: usize) -> io::Result<Vec<u8>> {
    let mut head = Vec::with_capacity(n);
    input.take(n as u64).read_to_end(&mut head)?;
    Ok(head)
}

/// The raw input, counting what is read from it and noting its end.
struct Counted<R> {
    inner: R,
    read: u64,
    eof: Arc<AtomicBool>,
    progress: Option<Progress>,
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        if n == 0 && !buf.is_empty() {
            self.eof.store(true, Ordering::Relaxed);
        }
        self.read += n as u64;
        if let Some(progress) = &mut self.progress {
            progress(self.read);
        }
        Ok(n)
    }
}

#[cfg(feature = "compress")]
fn decoder(
    compression: Compression,
    raw: impl Read + Send + 'static,
    eof: Arc<AtomicBool>,
    stop: Stop,
) -> Result<Box<dyn Read + Send>, Error> {
    let raw = BufReader::with_capacity(1 << 16, raw);
    let inner: Box<dyn Read + Send> = match compression {
        Compression::Gzip => Box::new(flate2::bufread::MultiGzDecoder::new(raw)),
        Compression::Zstd => Box::new(zstd::Frames::new(raw)),
        Compression::None => Box::new(raw),
    };
    Ok(Box::new(Decompressed {
        inner,
        compression,
        eof,
        stop,
        ended: false,
    }))
}

#[cfg(not(feature = "compress"))]
fn decoder(
    compression: Compression,
    _raw: impl Read + Send + 'static,
    _eof: Arc<AtomicBool>,
    _stop: Stop,
) -> Result<Box<dyn Read + Send>, Error> {
    Err(Error::Io(io::Error::new(
        io::ErrorKind::Unsupported,
        format!(
            "{} data: this build has no decompression (the `compress` feature)",
            compression.name()
        ),
    )))
}

/// Decompressed data with errors that say what happened: corrupt data, or a stream cut short
/// (an error, or the end of the data where [`Stop::tolerate`] says so).
#[cfg(feature = "compress")]
struct Decompressed {
    inner: Box<dyn Read + Send>,
    compression: Compression,
    eof: Arc<AtomicBool>,
    stop: Stop,
    ended: bool,
}

#[cfg(feature = "compress")]
impl Read for Decompressed {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.ended {
            return Ok(0);
        }
        match self.inner.read(buf) {
            Ok(n) => Ok(n),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => Err(e),
            Err(_) if self.eof.load(Ordering::Relaxed) => {
                // The file ended inside the compressed stream.
                if self.stop.tolerate.load(Ordering::Relaxed) {
                    self.stop.cut.store(true, Ordering::Relaxed);
                    self.ended = true;
                    Ok(0)
                } else {
                    Err(cut_error(self.compression))
                }
            }
            Err(e) => Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("corrupt {} data: {e}", self.compression.name()),
            )),
        }
    }
}

/// Zstandard streams of several frames, through ruzstd.
#[cfg(feature = "compress")]
mod zstd {
    use std::io::{self, BufRead, Read};

    use ruzstd::decoding::errors::{FrameDecoderError, ReadFrameHeaderError};
    use ruzstd::decoding::{BlockDecodingStrategy, FrameDecoder};

    /// Decodes every frame of a zstd stream in turn, checking each frame's content checksum
    /// and skipping skippable frames.
    pub(super) struct Frames<R> {
        source: R,
        decoder: FrameDecoder,
        /// Whether a frame is being decoded (else the next one starts at `source`).
        in_frame: bool,
    }

    impl<R: BufRead> Frames<R> {
        pub(super) fn new(source: R) -> Self {
            Self {
                source,
                decoder: FrameDecoder::new(),
                in_frame: false,
            }
        }

        /// Starts the next frame; `false` at the end of the stream.
        fn next_frame(&mut self) -> io::Result<bool> {
            loop {
                if self.source.fill_buf()?.is_empty() {
                    return Ok(false);
                }
                match self.decoder.reset(&mut self.source) {
                    Ok(()) => return Ok(true),
                    Err(FrameDecoderError::ReadFrameHeaderError(
                        ReadFrameHeaderError::SkipFrame { length, .. },
                    )) => {
                        let skipped =
                            io::copy(&mut (&mut self.source).take(length.into()), &mut io::sink())?;
                        if skipped < u64::from(length) {
                            return Err(io::Error::other("a skippable frame is cut short"));
                        }
                    }
                    Err(e) => return Err(io::Error::other(e)),
                }
            }
        }
    }

    impl<R: BufRead> Read for Frames<R> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            if buf.is_empty() {
                return Ok(0);
            }
            loop {
                if !self.in_frame {
                    if !self.next_frame()? {
                        return Ok(0);
                    }
                    self.in_frame = true;
                }
                if self.decoder.can_collect() > 0 {
                    return self.decoder.read(buf);
                }
                if self.decoder.is_finished() {
                    if let (Some(want), Some(got)) = (
                        self.decoder.get_checksum_from_data(),
                        self.decoder.get_calculated_checksum(),
                    ) && want != got
                    {
                        return Err(io::Error::other(format!(
                            "content checksum mismatch (frame says {want:08x}, data {got:08x})"
                        )));
                    }
                    self.in_frame = false;
                    continue;
                }
                self.decoder
                    .decode_blocks(&mut self.source, BlockDecodingStrategy::UptoBlocks(1))
                    .map_err(io::Error::other)?;
            }
        }
    }
}

#[cfg(all(test, feature = "compress"))]
mod tests {
    use super::*;
    use std::io::Write;

    fn gzip(data: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    fn zstd(data: &[u8]) -> Vec<u8> {
        ruzstd::encoding::compress_to_vec(data, ruzstd::encoding::CompressionLevel::Fastest)
    }

    fn read_all(bytes: Vec<u8>) -> Result<(Source, Vec<u8>), Error> {
        let mut s = Source::from_reader("test input", None, Cursor::new(bytes), None)?;
        let mut out = Vec::new();
        s.read_to_end(&mut out)?;
        Ok((s, out))
    }

    /// A pipe that hands out one byte per read: the magic and the sniffed head must still be
    /// found.
    struct Trickle(Cursor<Vec<u8>>);
    impl Read for Trickle {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let n = buf.len().min(1);
            self.0.read(&mut buf[..n])
        }
    }

    fn csv_text() -> Vec<u8> {
        let mut text = b"seq,send_ms,arrival_ms,value\n".to_vec();
        for i in 0..5000 {
            text.extend_from_slice(format!("{i},{},{},{i}\n", i * 50, i * 50 + 7).as_bytes());
        }
        text
    }

    #[test]
    fn compression_is_told_by_magic_bytes() {
        assert_eq!(Compression::sniff(b"\x1f\x8b\x08\x00"), Compression::Gzip);
        assert_eq!(Compression::sniff(b"\x28\xb5\x2f\xfd"), Compression::Zstd);
        assert_eq!(Compression::sniff(b"\x28\xb5\x2f"), Compression::None);
        assert_eq!(Compression::sniff(b"seq,"), Compression::None);
        assert_eq!(Compression::sniff(b""), Compression::None);
    }

    #[test]
    fn plain_gzip_and_zstd_read_the_same_bytes_and_format() {
        let text = csv_text();
        for (bytes, want) in [
            (text.clone(), Compression::None),
            (gzip(&text), Compression::Gzip),
            (zstd(&text), Compression::Zstd),
        ] {
            let (s, out) = read_all(bytes).unwrap();
            assert_eq!(s.compression(), want);
            assert_eq!(s.format(), Some(Format::Csv));
            assert_eq!(out, text, "{want:?}");
        }
        let pcap = b"\xd4\xc3\xb2\xa1\x02\x00\x04\x00rest of a pcap".to_vec();
        let (s, out) = read_all(zstd(&pcap)).unwrap();
        assert_eq!((s.format(), out), (Some(Format::Pcap), pcap));
    }

    #[test]
    fn a_trickling_pipe_is_sniffed_like_a_file() {
        let text = csv_text();
        let mut s =
            Source::from_reader("pipe", None, Trickle(Cursor::new(gzip(&text))), None).unwrap();
        assert_eq!(
            (s.compression(), s.format()),
            (Compression::Gzip, Some(Format::Csv))
        );
        let mut out = Vec::new();
        s.read_to_end(&mut out).unwrap();
        assert_eq!(out, text);
    }

    #[test]
    fn concatenated_members_and_frames_are_all_read() {
        let (a, b) = (
            b"seq,send_ms,arrival_ms\n1,2,3\n".to_vec(),
            b"4,5,6\n".to_vec(),
        );
        let whole = [a.clone(), b.clone()].concat();
        let (_, out) = read_all([gzip(&a), gzip(&b)].concat()).unwrap();
        assert_eq!(out, whole);
        // A skippable frame (magic 0x184D2A50, 3 bytes) between two zstd frames.
        let skippable = [&[0x50, 0x2a, 0x4d, 0x18, 3, 0, 0, 0][..], b"xyz"].concat();
        let (_, out) = read_all([zstd(&a), skippable, zstd(&b)].concat()).unwrap();
        assert_eq!(out, whole);
    }

    #[test]
    fn corrupt_and_cut_streams_are_errors_that_say_so() {
        let text = csv_text();
        for bytes in [gzip(&text), zstd(&text)] {
            let cut = bytes[..bytes.len() / 2].to_vec();
            let err = read_all(cut).unwrap_err().to_string();
            assert!(err.contains("cut short"), "{err}");
            let mut flipped = bytes.clone();
            let mid = flipped.len() / 2;
            flipped[mid] ^= 0x55;
            flipped[mid + 1] ^= 0xaa;
            let err = read_all(flipped).unwrap_err().to_string();
            assert!(err.contains("corrupt"), "{err}");
        }
        // A bad CRC in the gzip trailer.
        let mut bad_crc = gzip(&text);
        let n = bad_crc.len();
        bad_crc[n - 8] ^= 1;
        let err = read_all(bad_crc).unwrap_err().to_string();
        assert!(err.contains("corrupt gzip"), "{err}");
    }

    #[test]
    fn a_cut_compressed_trace_ends_where_the_data_ends() {
        let header = crate::Header::new(
            crate::trace::Clock::default(),
            crate::trace::Source::default(),
        );
        let mut w = crate::Writer::new(Vec::new(), &header).unwrap();
        // Payloads that do not compress, so that the cut falls after whole zstd blocks.
        let mut x = 1u64;
        for i in 0..5000 {
            let payload = (0..100)
                .map(|_| {
                    x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                    (x >> 56) as u8
                })
                .collect();
            w.write(&crate::Record::received(
                crate::Nanos::from_millis(i),
                payload,
            ))
            .unwrap();
        }
        let trace = w.into_inner();
        for bytes in [gzip(&trace), zstd(&trace)] {
            let cut = bytes[..bytes.len() * 2 / 3].to_vec();
            let (s, out) = read_all(cut).unwrap();
            assert_eq!(s.format(), Some(Format::Trace));
            assert!(s.cut_short());
            assert!(!out.is_empty() && trace.starts_with(&out), "a prefix");
            let (s, out) = read_all(bytes).unwrap();
            assert!(!s.cut_short());
            assert_eq!(out, trace);
        }
    }

    #[test]
    fn progress_counts_the_compressed_bytes() {
        let bytes = gzip(&csv_text());
        let total = bytes.len() as u64;
        let seen = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let s2 = Arc::clone(&seen);
        let progress: Progress = Box::new(move |n| s2.store(n, Ordering::Relaxed));
        let mut s =
            Source::from_reader("p", Some(total), Cursor::new(bytes), Some(progress)).unwrap();
        io::copy(&mut s, &mut io::sink()).unwrap();
        assert_eq!(seen.load(Ordering::Relaxed), total);
        assert_eq!(s.len(), Some(total));
    }

    #[test]
    fn a_missing_file_names_its_path() {
        let err = Source::open("/nonexistent/x.pcap.gz")
            .unwrap_err()
            .to_string();
        assert!(err.contains("cannot open /nonexistent/x.pcap.gz"), "{err}");
    }
}
