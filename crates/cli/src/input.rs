//! Opening traces given on the command line, with the file name in every error, and the
//! flag names the library's errors leave to the command line. Every input goes through
//! [`open_input`]: `-` is standard input, and gzip or zstd compression is undone on the way
//! (`jitterlab_capture::source`).

use std::fs::File;
use std::io::{IsTerminal, Read};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use anyhow::{Context, Result, bail};
use jitterlab_capture::decode::{
    Collector, DecoderConfig, Finished, FlowSummary, SampleSink, flow,
};
use jitterlab_capture::filter::Filter;
use jitterlab_capture::pcap::{self, CaptureSummary};
use jitterlab_capture::sdp;
use jitterlab_capture::source::{self, Source};
use jitterlab_capture::spec::parse_share;
use jitterlab_capture::trace::{Endpoint, RecordRef};
use jitterlab_capture::{Decoded, Format, Header, Reader, Record, RecordKind, StreamInfo};

/// Decoder options shared by commands that read traces.
#[derive(Debug, Clone, Default, clap::Args)]
#[command(next_help_heading = "Decoding")]
pub(crate) struct DecodeArgs {
    /// Payload decoder (default: the one the trace names; for captures, each flow judged by
    /// its packets): auto, rtp, probe, enet, kcp, raknet, udp or layout:SPEC (e.g.
    /// layout:seq=u32be@0,send=f64le@4:ms,value=f32le@12*3).
    #[arg(long, value_name = "NAME", value_parser = crate::values::Decoder)]
    pub(crate) decoder: Option<String>,
    /// Clock rate for a dynamic RTP payload type, e.g. 96=90000 (repeatable).
    #[arg(long = "clock-rate", value_name = "PT=HZ")]
    pub(crate) clock_rates: Vec<String>,
    /// Take the RTP streams as video (packets sharing a timestamp form one frame), whatever
    /// their SDP or payload type says.
    #[arg(long, conflicts_with = "audio")]
    pub(crate) video: bool,
    /// Take the RTP streams as audio, whatever their SDP or payload type says.
    #[arg(long)]
    pub(crate) audio: bool,
    #[command(flatten)]
    pub(crate) select: Selection,
}

/// What playout's quality figures assume, for commands that play audio.
#[derive(Debug, Clone, Default, clap::Args)]
#[command(next_help_heading = "Playout quality")]
pub(crate) struct QualityArgs {
    /// The codec the E-model's MOS takes (default: the stream's encoding or payload type,
    /// G.711 when neither is known), e.g. g711, g722, g729, amr-12.2, opus, or ie=N,bpl=N.
    #[arg(long, value_name = "CODEC", value_parser = crate::values::Codec)]
    pub(crate) codec: Option<String>,
    /// The one-way network delay of the fastest packet, added to the mouth-to-ear delay the
    /// MOS is computed from (a capture at the receiver cannot know it), e.g. 40ms.
    #[arg(long, value_name = "DELAY", default_value = "0ms")]
    pub(crate) network_delay: String,
}

impl QualityArgs {
    /// The options, each value checked with its flag named.
    pub(crate) fn options(&self) -> Result<jitterlab_replay::playout::QualityOptions> {
        let codec = self
            .codec
            .as_deref()
            .map(|c| c.parse().context("--codec"))
            .transpose()?;
        let network_delay = jitterlab_capture::time::parse_duration(&self.network_delay)
            .map_err(|e| anyhow::anyhow!("--network-delay {}: {e}", self.network_delay))?;
        if network_delay < jitterlab_capture::Nanos::ZERO {
            bail!(
                "--network-delay {}: expected a delay ≥ 0",
                self.network_delay
            );
        }
        Ok(jitterlab_replay::playout::QualityOptions {
            codec,
            network_delay,
        })
    }
}

/// Which streams of a trace or capture a command looks at (every one by default).
#[derive(Debug, Clone, Default, clap::Args)]
#[command(next_help_heading = "Selection")]
pub(crate) struct Selection {
    /// Only this stream (by its index in `jitterlab info`).
    #[arg(long, value_name = "N")]
    pub(crate) stream: Option<u32>,
    /// Only the RTP stream(s) with this SSRC (0x1A2B3C4D or decimal).
    #[arg(long, value_name = "SSRC")]
    pub(crate) ssrc: Option<String>,
    /// Only the flow SRC-DST, e.g. 10.0.0.1:5000-10.0.0.2:6000 (as `jitterlab info` lists).
    #[arg(long, value_name = "SRC-DST")]
    pub(crate) flow: Option<String>,
    /// Keep only datagrams this tcpdump-style expression accepts, e.g. "udp port 5004".
    #[arg(long, value_name = "EXPR")]
    pub(crate) filter: Option<String>,
}

impl Selection {
    /// Whether anything narrows the trace down.
    pub(crate) fn is_some(&self) -> bool {
        self.stream.is_some() || self.ssrc.is_some() || self.flow.is_some() || self.filter.is_some()
    }

    /// The SSRC asked for.
    pub(crate) fn ssrc(&self) -> Result<Option<u32>> {
        self.ssrc
            .as_deref()
            .map(|text| {
                let t = text.trim();
                match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
                    Some(hex) => u32::from_str_radix(hex, 16),
                    None => t.parse(),
                }
                .with_context(|| format!("--ssrc '{text}': expected 0x1A2B3C4D or a decimal SSRC"))
            })
            .transpose()
    }

    /// The `--filter` expression, parsed.
    pub(crate) fn filter(&self) -> Result<Option<Filter>> {
        Ok(self.filter.as_deref().map(Filter::parse).transpose()?)
    }

    /// The flow asked for.
    pub(crate) fn flow(&self) -> Result<Option<(std::net::SocketAddr, std::net::SocketAddr)>> {
        self.flow
            .as_deref()
            .map(|f| Ok(flow::parse_flow(f)?))
            .transpose()
    }

    /// Narrows `decoded` (read from `display`) to the selected streams.
    ///
    /// # Errors
    /// A malformed selection, or one that matches no stream.
    pub(crate) fn apply(&self, decoded: &mut Decoded, display: &str) -> Result<()> {
        let ssrc = self.ssrc()?;
        let flow = self.flow()?;
        if let Some(id) = self.stream
            && !decoded.streams.iter().any(|s| s.id == id)
        {
            bail!(
                "--stream {id}: {display} has {} stream(s){}",
                decoded.streams.len(),
                match decoded.streams.last() {
                    Some(s) => format!(" (0..={})", s.id),
                    None => String::new(),
                }
            );
        }
        if self.stream.is_none() && ssrc.is_none() && flow.is_none() {
            return Ok(());
        }
        let in_flow = |src: Option<Endpoint>, dst: Option<Endpoint>| {
            flow.is_none_or(|(a, b)| src == Some(Endpoint(a)) && dst == Some(Endpoint(b)))
        };
        let keep = |s: &StreamInfo| {
            self.stream.is_none_or(|id| id == s.id)
                && ssrc.is_none_or(|x| s.ssrc == Some(x))
                && in_flow(s.src, s.dst)
        };
        let wanted: Vec<(Option<Endpoint>, Option<Endpoint>)> = decoded
            .streams
            .iter()
            .filter(|s| keep(s))
            .map(|s| (s.src, s.dst))
            .collect();
        if wanted.is_empty() {
            let names: Vec<String> = decoded
                .flows
                .iter()
                .take(5)
                .map(FlowSummary::label)
                .collect();
            let flows = format!(
                "flows: {}{}",
                names.join(", "),
                if decoded.flows.len() > 5 { ", ..." } else { "" }
            );
            if let Some(f) = &self.flow
                && !decoded.flows.iter().any(|d| in_flow(d.src, d.dst))
            {
                bail!("{display}: no flow {f} ({flows})");
            }
            bail!(
                "{display}: no stream matches {} ({flows}; `jitterlab info` lists the streams)",
                self.describe()
            );
        }
        let keep_flow = |f: &FlowSummary| {
            in_flow(f.src, f.dst) && (flow.is_some() || wanted.contains(&(f.src, f.dst)))
        };
        decoded.retain(keep, Some(&keep_flow));
        Ok(())
    }

    fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(id) = self.stream {
            parts.push(format!("--stream {id}"));
        }
        if let Some(x) = &self.ssrc {
            parts.push(format!("--ssrc {x}"));
        }
        if let Some(f) = &self.flow {
            parts.push(format!("--flow {f}"));
        }
        parts.join(" ")
    }
}

/// A pcap/pcapng file read into records.
pub(crate) struct Capture {
    pub(crate) header: Header,
    pub(crate) records: Vec<Record>,
    pub(crate) summary: CaptureSummary,
}

/// How messages name an input: its path, or `standard input` for `-`.
pub(crate) fn shown(path: &Path) -> String {
    if source::is_stdio(path) {
        "standard input".to_owned()
    } else {
        path.display().to_string()
    }
}

/// How messages name an output: its path, or `standard output` for `-`.
pub(crate) fn shown_out(path: &Path) -> String {
    if source::is_stdio(path) {
        "standard output".to_owned()
    } else {
        path.display().to_string()
    }
}

/// Refuses `-` given more than once among a command's inputs: standard input can be read
/// only once.
pub(crate) fn stdin_once<'a>(paths: impl IntoIterator<Item = &'a PathBuf>) -> Result<()> {
    let n = paths.into_iter().filter(|p| source::is_stdio(p)).count();
    if n > 1 {
        bail!("- (standard input) is given {n} times; it can be read only once");
    }
    Ok(())
}

/// Refuses `-` for an output that is a directory of files.
pub(crate) fn not_stdout_dir(path: &Path, flag: &str) -> Result<()> {
    if source::is_stdio(path) {
        bail!("{flag} -: this output is a directory of files; standard output cannot hold it");
    }
    Ok(())
}

/// Where a command's own report goes: standard output, or standard error when its data goes
/// to standard output (`-o -`), so that the data stays clean.
pub(crate) fn report_out(data_on_stdout: bool) -> Box<dyn std::io::Write> {
    if data_on_stdout {
        Box::new(std::io::stderr())
    } else {
        Box::new(crate::say::stdout())
    }
}

/// An opened input and its progress bar (hidden unless asked for and stderr is a terminal).
pub(crate) struct Input {
    pub(crate) source: Source,
    pub(crate) bar: indicatif::ProgressBar,
}

impl Input {
    /// Clears the progress bar and warns when a compressed trace was cut short.
    pub(crate) fn finish(&self) {
        self.bar.finish_and_clear();
        if self.source.cut_short() {
            eprintln!(
                "warning: {}: the {} data is cut short (the file is truncated); every complete \
                 record before the cut was read",
                self.source.name(),
                self.source.compression().name()
            );
        }
    }
}

/// Standard input read in full by [`spool_stdin`], for a command that reads its input twice.
static SPOOLED_STDIN: OnceLock<Arc<[u8]>> = OnceLock::new();

/// When `path` is `-`, reads all of standard input now, so that [`open_input`] can open it
/// again (a command that reads its input twice; a file is simply opened twice).
pub(crate) fn spool_stdin(path: &Path) -> Result<()> {
    if source::is_stdio(path) && SPOOLED_STDIN.get().is_none() {
        let mut bytes = Vec::new();
        std::io::stdin()
            .lock()
            .read_to_end(&mut bytes)
            .context("cannot read standard input")?;
        let _ = SPOOLED_STDIN.set(bytes.into());
    }
    Ok(())
}

/// Opens `path` (`-`: standard input) with its compression and format detected; with
/// `progress`, a bar of the bytes read from the file is drawn on a terminal.
pub(crate) fn open_input(path: &Path, progress: bool) -> Result<Input> {
    let spooled = SPOOLED_STDIN.get().filter(|_| source::is_stdio(path));
    let len = match spooled {
        Some(bytes) => Some(bytes.len() as u64),
        None if source::is_stdio(path) => None,
        None => std::fs::metadata(path)
            .ok()
            .filter(|m| m.is_file())
            .map(|m| m.len()),
    };
    let bar = read_progress(progress, len, path);
    let tick = bar.clone();
    let tick: source::Progress = Box::new(move |n| tick.set_position(n));
    let source = match spooled {
        Some(bytes) => Source::from_reader(
            "standard input",
            len,
            std::io::Cursor::new(Arc::clone(bytes)),
            Some(tick),
        )?,
        None => Source::open_with_progress(path, Some(tick))?,
    };
    Ok(Input { source, bar })
}

/// A progress bar of bytes read, in the house style of `sweeping::progress`: hidden when not
/// asked for or when stderr is not a terminal; a byte counter when the size is unknown.
fn read_progress(shown_at_all: bool, len: Option<u64>, path: &Path) -> indicatif::ProgressBar {
    if !shown_at_all || crate::say::quiet() || !std::io::stderr().is_terminal() {
        return indicatif::ProgressBar::hidden();
    }
    let name = path
        .file_name()
        .map_or_else(|| shown(path), |n| n.to_string_lossy().into_owned());
    let (bar, template) = match len {
        Some(len) => (
            indicatif::ProgressBar::new(len),
            "{bar:40} {bytes}/{total_bytes} {msg}  {bytes_per_sec}  ETA {eta}",
        ),
        None => (
            indicatif::ProgressBar::no_length(),
            "{spinner} {bytes} {msg}  {bytes_per_sec}",
        ),
    };
    bar.set_style(
        indicatif::ProgressStyle::with_template(template)
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    bar.set_message(format!("reading {name}"));
    bar
}

/// The whole text of a small input (a grid, a frame list): `-` is standard input, and
/// compressed files are read too.
pub(crate) fn read_text(path: &Path) -> Result<String> {
    let mut input = open_input(path, false)?;
    let mut text = String::new();
    input
        .source
        .read_to_string(&mut text)
        .with_context(|| format!("cannot read {}", shown(path)))?;
    Ok(text)
}

/// Reads a capture, keeping the UDP datagrams that pass `filter`.
pub(crate) fn read_capture(
    input: &mut Input,
    filter: Option<&str>,
    decoder: &str,
) -> Result<Capture> {
    let display = input.source.name().to_owned();
    let filter = filter.map(Filter::parse).transpose()?;
    let (records, summary) = pcap::read_capture_all(&mut input.source, filter.as_ref())
        .with_context(|| display.clone())?;
    input.finish();
    for problem in summary.problems() {
        crate::say::note!("note: {display}: {problem}");
    }
    let name = if input.source.name() == "standard input" {
        "stdin".to_owned()
    } else {
        Path::new(&display)
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned())
    };
    let header = pcap::header_for(&name, &summary, decoder);
    Ok(Capture {
        header,
        records,
        summary,
    })
}

fn decoder_config(args: &DecodeArgs, header: &Header) -> Result<Option<DecoderConfig>> {
    let config = match &args.decoder {
        Some(name) => {
            let mut c = DecoderConfig::parse(name)?;
            c.add_hints(header);
            Some(c)
        }
        None if args.clock_rates.is_empty() => None,
        None => Some(DecoderConfig::from_header(header)?),
    };
    Ok(match config {
        Some(mut c) => {
            for spec in &args.clock_rates {
                c.add_clock_rate(spec)?;
            }
            Some(c)
        }
        None => None,
    })
}

/// Decodes an in-memory capture.
pub(crate) fn decode_capture(capture: &Capture, args: &DecodeArgs) -> Result<Decoded> {
    let config = decoder_config(args, &capture.header)?;
    let mut collector = Collector::new(&capture.header, config)?;
    for rec in &capture.records {
        collector.push(rec);
    }
    Ok(collector.finish())
}

/// Reads and decodes a trace file, or a pcap/pcapng capture directly, narrowed to the
/// streams `args` selects.
pub(crate) fn load(path: &Path, args: &DecodeArgs) -> Result<Decoded> {
    Ok(load_with_capture(path, args)?.0)
}

/// As [`load`], also returning the capture summary when `path` is a capture.
pub(crate) fn load_with_capture(
    path: &Path,
    args: &DecodeArgs,
) -> Result<(Decoded, Option<CaptureSummary>)> {
    load_with_progress(path, args, false)
}

/// As [`load_with_capture`], with a progress bar of the bytes read on a terminal when
/// `progress`.
pub(crate) fn load_with_progress(
    path: &Path,
    args: &DecodeArgs,
    progress: bool,
) -> Result<(Decoded, Option<CaptureSummary>)> {
    let display = shown(path);
    let read = read_trace(path, args, progress, |header, config| {
        Ok(Collector::new(header, config)?)
    })?;
    let mut decoded = read.push.finish();
    decoded.trailing_bytes = read.trailing_bytes;
    warn_skipped(&display, &decoded);
    args.select.apply(&mut decoded, &display)?;
    if let Some(kind) = args.forced_media() {
        for s in decoded.streams.iter_mut().filter(|s| s.ssrc.is_some()) {
            s.media = Some(kind);
        }
    }
    Ok((decoded, read.capture))
}

impl DecodeArgs {
    /// The media kind `--video` or `--audio` forces on RTP streams.
    pub(crate) fn forced_media(&self) -> Option<jitterlab_capture::decode::MediaKind> {
        match (self.video, self.audio) {
            (true, _) => Some(jitterlab_capture::decode::MediaKind::Video),
            (_, true) => Some(jitterlab_capture::decode::MediaKind::Audio),
            _ => None,
        }
    }
}

/// What takes a trace's records as [`read_trace`] reads them: a [`Collector`], or one shared
/// with a thread that prints running summaries.
pub(crate) trait Push {
    /// Adds payload maps found in SIP signalling.
    fn add_rtpmaps(&mut self, maps: Vec<sdp::RtpMap>);
    /// Takes one record, borrowed from the reader's buffer.
    fn push(&mut self, rec: &RecordRef<'_>);
}

impl<S: SampleSink> Push for Collector<S> {
    fn add_rtpmaps(&mut self, maps: Vec<sdp::RtpMap>) {
        Self::add_rtpmaps(self, maps);
    }
    fn push(&mut self, rec: &RecordRef<'_>) {
        Self::push_ref(self, rec);
    }
}

/// A trace read by [`read_trace`].
pub(crate) struct ReadTrace<P> {
    /// What took its records.
    pub(crate) push: P,
    /// The capture's summary, when the input is a pcap/pcapng capture.
    pub(crate) capture: Option<CaptureSummary>,
    /// Bytes at the end of a trace that did not form a whole record (warned about already).
    pub(crate) trailing_bytes: u64,
}

/// Reads a trace file, or a pcap/pcapng capture directly, record by record into what `make`
/// builds from the trace's header and the decoder the arguments name, with `--filter`
/// applied; warns about what was cut or left out. With `progress`, a bar of the bytes read
/// on a terminal.
pub(crate) fn read_trace<P: Push>(
    path: &Path,
    args: &DecodeArgs,
    progress: bool,
    make: impl FnOnce(&Header, Option<DecoderConfig>) -> Result<P>,
) -> Result<ReadTrace<P>> {
    let mut opened = Opened::new(path, args, progress)?;
    if opened.is_capture() {
        return opened.capture(args, make);
    }
    let display = opened.display.clone();
    let filter = opened.filter.take();
    let mut reader = Reader::new(&mut opened.input.source).with_context(|| display.clone())?;
    let config = decoder_config(args, reader.header())?;
    let mut push = make(reader.header(), config)?;
    let mut keep = Keep::new(filter.as_ref());
    // Read and parsed on a second thread while this one decodes.
    jitterlab_capture::trace::read_ahead(&mut reader, |rec| {
        if keep.keeps(rec) {
            push.push(rec);
        }
    })
    .with_context(|| display.clone())?;
    let trailing_bytes = reader.trailing_bytes();
    drop(reader);
    opened.finish(keep.unaddressed, trailing_bytes);
    Ok(ReadTrace {
        push,
        capture: None,
        trailing_bytes,
    })
}

/// A trace decoded by [`read_collected`] into a sink.
pub(crate) struct ReadCollected<S> {
    /// What the collector finished with; its sink is the caller's.
    pub(crate) finished: Finished<S>,
    /// Records the collector took.
    pub(crate) records: u64,
    /// The capture's summary, when the input is a pcap/pcapng capture.
    pub(crate) capture: Option<CaptureSummary>,
    /// Bytes at the end of a trace that did not form a whole record (warned about already).
    pub(crate) trailing_bytes: u64,
}

/// As [`read_trace`] into a collector with `sink`, finished ([`Collector::finish_parts`]): a
/// trace file is read, parsed and decoded on a second thread while `sink` takes the samples
/// on this one ([`jitterlab_capture::decode::ahead`]), for a sink that is heavier than the
/// decoding (a replay); a capture is read ahead and decoded here.
pub(crate) fn read_collected<S: SampleSink>(
    path: &Path,
    args: &DecodeArgs,
    progress: bool,
    sink: S,
) -> Result<ReadCollected<S>> {
    use jitterlab_capture::decode::ahead::{Forward, collect_ahead};
    let mut opened = Opened::new(path, args, progress)?;
    if opened.is_capture() {
        let read = opened.capture(args, |header, config| {
            Ok(Collector::with_sink(header, config, sink)?)
        })?;
        let records = read.push.records();
        return Ok(ReadCollected {
            finished: read.push.finish_parts(),
            records,
            capture: read.capture,
            trailing_bytes: 0,
        });
    }
    let display = opened.display.clone();
    let filter = opened.filter.take();
    let mut reader = Reader::new(&mut opened.input.source).with_context(|| display.clone())?;
    let config = decoder_config(args, reader.header())?;
    let collector = Collector::with_sink(reader.header(), config, Forward::default())?;
    let mut keep = Keep::new(filter.as_ref());
    let (finished, records) = collect_ahead(&mut reader, collector, |rec| keep.keeps(rec), sink)
        .with_context(|| display.clone())?;
    let trailing_bytes = reader.trailing_bytes();
    drop(reader);
    opened.finish(keep.unaddressed, trailing_bytes);
    Ok(ReadCollected {
        finished,
        records,
        capture: None,
        trailing_bytes,
    })
}

/// An input opened for [`read_trace`] or [`read_collected`], with its `--filter`.
struct Opened {
    display: String,
    filter: Option<Filter>,
    input: Input,
}

impl Opened {
    fn new(path: &Path, args: &DecodeArgs, progress: bool) -> Result<Self> {
        let filter = args.select.filter()?;
        Ok(Self {
            display: shown(path),
            filter,
            input: open_input(path, progress)?,
        })
    }

    /// Whether the input is a pcap/pcapng capture rather than a trace file.
    fn is_capture(&self) -> bool {
        self.input.source.format().is_some_and(Format::is_capture)
    }

    /// The capture, decoded as it is read into what `make` builds.
    fn capture<P: Push>(
        mut self,
        args: &DecodeArgs,
        make: impl FnOnce(&Header, Option<DecoderConfig>) -> Result<P>,
    ) -> Result<ReadTrace<P>> {
        // Decoded as it is read: no copy of the capture is kept. SDP applies to the packets
        // after it, as it does in Wireshark (and in traces imported from the capture).
        let header = pcap::header_for("", &CaptureSummary::default(), "auto");
        let mut push = make(&header, decoder_config(args, &header)?)?;
        let mut each = |rec: &RecordRef<'_>| {
            if let (Some(src), Some(dst)) = (rec.src, rec.dst) {
                push.add_rtpmaps(sdp::scan_sip(src.0, dst.0, rec.payload, rec.time));
            }
            push.push(rec);
        };
        let filter = self.filter.as_ref();
        let source = &mut self.input.source;
        // A file is read and parsed on a second thread while this one decodes; a pipe on
        // this one, so each datagram is decoded as it comes (`info -` on a live capture).
        let summary = if source.len().is_some() {
            pcap::read_capture_ahead(source, filter, each)
        } else {
            pcap::read_capture_ref(source, filter, |rec| {
                each(&rec);
                Ok(())
            })
        }
        .with_context(|| self.display.clone())?;
        self.input.finish();
        for problem in summary.problems() {
            crate::say::note!("note: {}: {problem}", self.display);
        }
        Ok(ReadTrace {
            push,
            capture: Some(summary),
            trailing_bytes: 0,
        })
    }

    /// After a trace file: the progress bar cleared, and what was left out or cut warned of.
    fn finish(self, unaddressed: u64, trailing_bytes: u64) {
        let display = &self.display;
        self.input.finish();
        if unaddressed > 0 {
            crate::say::note!(
                "note: {display}: {unaddressed} record(s) carry no addresses, so --filter \
                 cannot match them; they were left out"
            );
        }
        if trailing_bytes > 0 {
            eprintln!(
                "warning: {display}: the last {trailing_bytes} bytes do not form a whole record \
                 (the writer stopped mid-record); every complete record was read"
            );
        }
    }
}

/// `--filter` over a trace's records: which it keeps, and how many it left out for carrying
/// no addresses.
struct Keep<'f> {
    filter: Option<&'f Filter>,
    unaddressed: u64,
}

impl<'f> Keep<'f> {
    fn new(filter: Option<&'f Filter>) -> Self {
        Self {
            filter,
            unaddressed: 0,
        }
    }

    fn keeps(&mut self, rec: &RecordRef<'_>) -> bool {
        let Some(f) = self.filter else {
            return true;
        };
        if rec.kind == RecordKind::Stats {
            return true;
        }
        match (rec.src, rec.dst) {
            (Some(src), Some(dst)) => f.matches(src.0, dst.0),
            _ => {
                self.unaddressed += 1;
                false
            }
        }
    }
}

/// Reads `path` into `info`'s accumulator: every stream's figures, no sample kept.
pub(crate) fn read_accumulated(
    path: &Path,
    args: &DecodeArgs,
    progress: bool,
) -> Result<ReadCollected<jitterlab_capture::stats::Accumulator>> {
    // Decoded on this thread while a second reads and parses: the accumulator is light, so
    // decoding on the reader's thread ([`read_collected`]) would leave this one idle.
    let read = read_trace(path, args, progress, |header, config| {
        Ok(Collector::with_sink(
            header,
            config,
            jitterlab_capture::stats::Accumulator::default(),
        )?)
    })?;
    Ok(ReadCollected {
        records: read.push.records(),
        finished: read.push.finish_parts(),
        capture: read.capture,
        trailing_bytes: read.trailing_bytes,
    })
}

pub(crate) fn warn_skipped(display: &str, decoded: &Decoded) {
    if decoded.skipped > 0 {
        eprintln!(
            "warning: {display}: {} packet(s) could not be decoded and were skipped, e.g. {}",
            decoded.skipped,
            decoded.skip_examples.first().map_or("", String::as_str)
        );
    }
}

/// Creates an output file that is appended to as it is written (captures, sender logs): never
/// over an existing file unless `force`.
#[cfg_attr(not(feature = "live"), allow(dead_code))]
pub(crate) fn create_output(path: &Path, force: bool) -> Result<File> {
    if source::is_stdio(path) {
        bail!(
            "-: a live trace is written to a file as packets arrive and synced to disk at the \
             end; give a file name (read it meanwhile with `jitterlab info FILE`)"
        );
    }
    let mut open = std::fs::OpenOptions::new();
    open.write(true);
    if force {
        open.create(true).truncate(true);
    } else {
        open.create_new(true);
    }
    open.open(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::AlreadyExists => {
            anyhow::anyhow!(
                "{} already exists (pass --force to overwrite)",
                path.display()
            )
        }
        _ => anyhow::anyhow!("cannot create {}: {e}", path.display()),
    })
}

/// Parses a ratio given as `1%` or `0.01`, within 0..=1.
pub(crate) fn parse_ratio(flag: &str, text: &str) -> Result<f64> {
    parse_share(text)
        .ok()
        .filter(|v| (0.0..=1.0).contains(v))
        .with_context(|| format!("{flag} '{text}': expected a ratio 0..1 or 0%..100%"))
}

/// Resolves HOST:PORT (a host name or an IP literal), or PORT alone as loopback; `what` names
/// the flag in the error.
#[cfg(feature = "live")]
pub(crate) fn parse_addr(text: &str, what: &str) -> Result<std::net::SocketAddr> {
    jitterlab_capture::live::resolve(text).map_err(|e| match e {
        jitterlab_capture::Error::Address { .. } => anyhow::anyhow!("{what} {e}"),
        e => anyhow::Error::new(e).context(format!("{what} {text}")),
    })
}
