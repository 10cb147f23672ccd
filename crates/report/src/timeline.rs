//! Replay timelines as tables: one row per rendered frame ([`TimelineWriter`]) or per playout
//! slot ([`PlayoutTimelineWriter`]), written as CSV or Parquet while the replay runs.
//!
//! Rows are buffered [`BATCH_ROWS`] at a time and each batch is written as soon as it is full
//! (one Parquet row group, or one run of CSV lines), so a timeline of any length needs only one
//! batch in memory. The CSV goes through polars' CSV writer, which quotes any field or header
//! holding a comma, a quote or a line break. [`TableWriter`] and [`crate::write_frame`] are the same
//! machinery for any other table.
//!
//! ```
//! use jitterlab_report::timeline::{TableFormat, TimelineWriter};
//!
//! let mut out = Vec::new();
//! let writer = TimelineWriter::new(&mut out, TableFormat::Csv, &["x, left".to_owned()])?;
//! assert_eq!(writer.finish()?, 0);
//! let header = String::from_utf8(out).unwrap();
//! assert!(header.starts_with("stream,at_ms,target_ms,mode,hold,alpha,depth,delay_ms,error,state,startup,buffer_delay_ms,frozen,ahead_ms,\"x, left\""));
//! # Ok::<(), jitterlab_report::Error>(())
//! ```

use std::io::Write;

use jitterlab_capture::Nanos;
use jitterlab_replay::playout::PlayoutEvent;
use jitterlab_replay::{Frame, HoldReason};
use polars::io::csv::write::BatchedWriter as CsvBatched;
use polars::io::parquet::write::BatchedWriter as ParquetBatched;
use polars::prelude::*;

use crate::Error;
pub use crate::frame_io::TableFormat;

/// Rows buffered before a batch (a Parquet row group) is written.
pub const BATCH_ROWS: usize = 1 << 16;

/// The columns every frame row starts with, in order; the stream's channels follow.
pub const FRAME_COLUMNS: [&str; 14] = [
    "stream",
    "at_ms",
    "target_ms",
    "mode",
    "hold",
    "alpha",
    "depth",
    "delay_ms",
    "error",
    "state",
    "startup",
    "buffer_delay_ms",
    "frozen",
    "ahead_ms",
];

/// The columns of a playout timeline, one row per slot.
pub const PLAYOUT_COLUMNS: [&str; 4] = ["stream", "seq", "play_ms", "event"];

enum Batched<W: Write> {
    Csv(CsvBatched<W>),
    Parquet(Box<ParquetBatched<W>>),
    /// NDJSON needs no state between batches: each is written as it comes.
    Ndjson(W),
}

/// Writes a table batch by batch: every batch a [`DataFrame`] with the schema given to
/// [`TableWriter::new`].
pub struct TableWriter<W: Write> {
    inner: Batched<W>,
    schema: Schema,
    rows: u64,
}

impl<W: Write> TableWriter<W> {
    /// A writer of `format` into `out` for tables of `schema`.
    ///
    /// # Errors
    /// A schema the format cannot hold.
    pub fn new(out: W, format: TableFormat, schema: &Schema) -> Result<Self, Error> {
        let inner = match format {
            TableFormat::Csv => {
                Batched::Csv(CsvWriter::new(out).include_header(true).batched(schema)?)
            }
            TableFormat::Parquet => {
                Batched::Parquet(Box::new(ParquetWriter::new(out).batched(schema)?))
            }
            TableFormat::Ndjson => Batched::Ndjson(out),
        };
        Ok(Self {
            inner,
            schema: schema.clone(),
            rows: 0,
        })
    }

    /// Writes one batch (for Parquet, one row group per chunk of `df`).
    ///
    /// # Errors
    /// A batch whose columns differ from the schema's, polars or I/O failures.
    pub fn write_batch(&mut self, df: &mut DataFrame) -> Result<(), Error> {
        if df.schema().as_ref() != &self.schema {
            return Err(Error::Table(format!(
                "a batch of columns {:?} does not match the table's {:?}",
                df.get_column_names(),
                self.schema.iter_names().collect::<Vec<_>>()
            )));
        }
        if df.height() == 0 {
            return Ok(());
        }
        df.align_chunks();
        match &mut self.inner {
            Batched::Csv(w) => w.write_batch(df)?,
            Batched::Parquet(w) => w.write_batch(df)?,
            Batched::Ndjson(w) => crate::frame_io::write_frame(df, TableFormat::Ndjson, w)?,
        }
        self.rows += df.height() as u64;
        Ok(())
    }

    /// Finishes the table (the CSV header of an empty table, the Parquet footer) and returns
    /// how many rows it holds. The sink is flushed but not committed: an `AtomicFile` still
    /// needs its `commit`.
    ///
    /// # Errors
    /// Polars or I/O failures.
    pub fn finish(self) -> Result<u64, Error> {
        match self.inner {
            Batched::Csv(mut w) => w.finish()?,
            Batched::Parquet(w) => {
                w.finish()?;
            }
            Batched::Ndjson(mut w) => w.flush()?,
        }
        Ok(self.rows)
    }
}

/// The column names of a frame timeline for a stream with `channels`: [`FRAME_COLUMNS`], then
/// one column per channel. A channel whose name is empty, repeats an earlier one or is one of
/// [`FRAME_COLUMNS`] is named `value_I` instead (I its index), so names stay unique.
pub fn frame_columns(channels: &[String]) -> Vec<String> {
    let mut names: Vec<String> = FRAME_COLUMNS.iter().map(|&c| c.to_owned()).collect();
    for (i, ch) in channels.iter().enumerate() {
        let name = if ch.is_empty() || names.contains(ch) {
            format!("value_{i}")
        } else {
            ch.clone()
        };
        let name = if names.contains(&name) {
            format!("value_{i}_{}", names.len())
        } else {
            name
        };
        names.push(name);
    }
    names
}

fn ms(t: Nanos) -> f64 {
    t.as_millis_f64()
}

/// Buffered columns of one batch of frame rows.
#[derive(Default)]
struct FrameBatch {
    stream: Vec<u32>,
    at: Vec<f64>,
    target: Vec<f64>,
    mode: Vec<&'static str>,
    hold: Vec<Option<&'static str>>,
    alpha: Vec<Option<f64>>,
    depth: Vec<u64>,
    delay: Vec<Option<f64>>,
    error: Vec<Option<f64>>,
    state: Vec<Option<u32>>,
    startup: Vec<bool>,
    buffer_delay: Vec<f64>,
    frozen: Vec<bool>,
    ahead: Vec<Option<f64>>,
    values: Vec<Vec<Option<f64>>>,
}

impl FrameBatch {
    fn push(&mut self, f: &Frame<'_>) {
        self.stream.push(f.stream);
        self.at.push(ms(f.at));
        self.target.push(ms(f.target));
        self.mode.push(f.mode.name());
        self.hold.push(f.hold.map(HoldReason::name));
        self.alpha.push(f.alpha);
        self.depth.push(f.depth as u64);
        self.delay.push(f.delay.map(ms));
        self.error.push(f.error);
        self.state.push(f.state);
        self.startup.push(f.startup);
        self.buffer_delay.push(ms(f.buffer_delay));
        self.frozen.push(f.frozen);
        self.ahead.push(f.ahead.map(ms));
        for (i, column) in self.values.iter_mut().enumerate() {
            column.push(f.value.get(i).copied());
        }
    }

    fn len(&self) -> usize {
        self.stream.len()
    }

    /// The batch as a frame (columns named `names`), leaving the buffers empty.
    fn take(&mut self, names: &[PlSmallStr]) -> Result<DataFrame, Error> {
        let height = self.len();
        let width = self.values.len();
        let b = std::mem::take(self);
        let mut cols = vec![
            Column::new(names[0].clone(), b.stream),
            Column::new(names[1].clone(), b.at),
            Column::new(names[2].clone(), b.target),
            Column::new(names[3].clone(), b.mode),
            Column::new(names[4].clone(), b.hold),
            Column::new(names[5].clone(), b.alpha),
            Column::new(names[6].clone(), b.depth),
            Column::new(names[7].clone(), b.delay),
            Column::new(names[8].clone(), b.error),
            Column::new(names[9].clone(), b.state),
            Column::new(names[10].clone(), b.startup),
            Column::new(names[11].clone(), b.buffer_delay),
            Column::new(names[12].clone(), b.frozen),
            Column::new(names[13].clone(), b.ahead),
        ];
        for (name, v) in names[FRAME_COLUMNS.len()..].iter().zip(b.values) {
            cols.push(Column::new(name.clone(), v));
        }
        self.values = vec![Vec::new(); width];
        Ok(DataFrame::new(height, cols)?)
    }
}

/// The schema of a frame timeline with these column names.
fn frame_schema(names: &[PlSmallStr]) -> Schema {
    let types = [
        DataType::UInt32,
        DataType::Float64,
        DataType::Float64,
        DataType::String,
        DataType::String,
        DataType::Float64,
        DataType::UInt64,
        DataType::Float64,
        DataType::Float64,
        DataType::UInt32,
        DataType::Boolean,
        DataType::Float64,
        DataType::Boolean,
        DataType::Float64,
    ];
    names
        .iter()
        .cloned()
        .zip(
            types
                .into_iter()
                .chain(std::iter::repeat(DataType::Float64)),
        )
        .collect()
}

/// Writes one row per rendered [`Frame`], in batches, with the columns of [`frame_columns`]:
/// times in ms, `hold` the hold reason, `buffer_delay_ms` the policy's delay in force,
/// `frozen` whether the timeline stood still rather than step back, `ahead_ms` the time
/// buffered ahead of the target, then the shown channel values. Absent values are empty in
/// CSV and null in Parquet.
pub struct TimelineWriter<W: Write> {
    table: TableWriter<W>,
    names: Vec<PlSmallStr>,
    batch: FrameBatch,
    batch_rows: usize,
}

impl<W: Write> TimelineWriter<W> {
    /// A timeline of frames with `channels` (values beyond them are not written; missing ones
    /// are empty) into `out`.
    ///
    /// # Errors
    /// Polars failures.
    pub fn new(out: W, format: TableFormat, channels: &[String]) -> Result<Self, Error> {
        let names: Vec<PlSmallStr> = frame_columns(channels)
            .into_iter()
            .map(PlSmallStr::from)
            .collect();
        let table = TableWriter::new(out, format, &frame_schema(&names))?;
        Ok(Self {
            table,
            names,
            batch: FrameBatch {
                values: vec![Vec::new(); channels.len()],
                ..FrameBatch::default()
            },
            batch_rows: BATCH_ROWS,
        })
    }

    /// Writes a batch every `rows` rows instead of every [`BATCH_ROWS`] (at least 1).
    #[must_use]
    pub fn batch_rows(mut self, rows: usize) -> Self {
        self.batch_rows = rows.max(1);
        self
    }

    /// Adds one frame, writing the batch when it is full.
    ///
    /// # Errors
    /// Polars or I/O failures.
    pub fn push(&mut self, frame: &Frame<'_>) -> Result<(), Error> {
        self.batch.push(frame);
        if self.batch.len() >= self.batch_rows {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), Error> {
        let mut df = self.batch.take(&self.names)?;
        self.table.write_batch(&mut df)
    }

    /// Writes what is buffered and finishes the table; returns the number of rows.
    ///
    /// # Errors
    /// Polars or I/O failures.
    pub fn finish(mut self) -> Result<u64, Error> {
        self.flush()?;
        self.table.finish()
    }
}

/// Writes one row per playout slot ([`PLAYOUT_COLUMNS`]): the stream, the frame's sequence
/// number, its local play time in ms and what happened (`played`, `lost`, or `late`: it
/// arrived after its slot).
pub struct PlayoutTimelineWriter<W: Write> {
    table: TableWriter<W>,
    stream: Vec<u32>,
    seq: Vec<i64>,
    play: Vec<f64>,
    event: Vec<&'static str>,
    batch_rows: usize,
}

impl<W: Write> PlayoutTimelineWriter<W> {
    /// A playout timeline into `out`.
    ///
    /// # Errors
    /// Polars failures.
    pub fn new(out: W, format: TableFormat) -> Result<Self, Error> {
        let schema: Schema = PLAYOUT_COLUMNS
            .iter()
            .map(|&n| PlSmallStr::from(n))
            .zip([
                DataType::UInt32,
                DataType::Int64,
                DataType::Float64,
                DataType::String,
            ])
            .collect();
        Ok(Self {
            table: TableWriter::new(out, format, &schema)?,
            stream: Vec::new(),
            seq: Vec::new(),
            play: Vec::new(),
            event: Vec::new(),
            batch_rows: BATCH_ROWS,
        })
    }

    /// Adds one slot of `stream`, writing the batch when it is full.
    ///
    /// # Errors
    /// Polars or I/O failures.
    pub fn push(&mut self, stream: u32, event: &PlayoutEvent) -> Result<(), Error> {
        let (seq, at, what) = match *event {
            PlayoutEvent::Played { seq, at } => (seq, at, "played"),
            PlayoutEvent::Concealed {
                seq,
                at,
                arrived_late: true,
            } => (seq, at, "late"),
            PlayoutEvent::Concealed { seq, at, .. } => (seq, at, "lost"),
        };
        self.stream.push(stream);
        self.seq.push(seq);
        self.play.push(ms(at));
        self.event.push(what);
        if self.stream.len() >= self.batch_rows {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), Error> {
        let height = self.stream.len();
        let [s, q, p, e] = PLAYOUT_COLUMNS.map(PlSmallStr::from);
        let mut df = DataFrame::new(
            height,
            vec![
                Column::new(s, std::mem::take(&mut self.stream)),
                Column::new(q, std::mem::take(&mut self.seq)),
                Column::new(p, std::mem::take(&mut self.play)),
                Column::new(e, std::mem::take(&mut self.event)),
            ],
        )?;
        self.table.write_batch(&mut df)
    }

    /// Writes what is buffered and finishes the table; returns the number of rows.
    ///
    /// # Errors
    /// Polars or I/O failures.
    pub fn finish(mut self) -> Result<u64, Error> {
        self.flush()?;
        self.table.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use jitterlab_replay::Mode;

    const NAMES: [&str; 3] = ["x, left", "say \"hi\"", "depth"];

    fn frame(i: u32, value: &[f64]) -> Frame<'_> {
        Frame {
            stream: i % 2,
            at: Nanos::from_millis(i64::from(i) * 10),
            target: Nanos::from_millis(i64::from(i) * 10 - 100),
            mode: if i.is_multiple_of(3) {
                Mode::Hold
            } else {
                Mode::Interpolate
            },
            hold: i.is_multiple_of(3).then_some(HoldReason::Gap),
            alpha: (!i.is_multiple_of(3)).then_some(0.25),
            from: None,
            to: None,
            value,
            state: (!i.is_multiple_of(5)).then_some(i),
            shown: None,
            delay: (!i.is_multiple_of(4)).then_some(Nanos::from_millis(100 + i64::from(i))),
            depth: i as usize,
            buffer_delay: Nanos::from_millis(100),
            frozen: i.is_multiple_of(7),
            ahead: Some(Nanos::from_millis(i64::from(i) - 20)),
            error: i.is_multiple_of(2).then_some(f64::from(i) / 8.0),
            startup: i < 2,
        }
    }

    /// Writes `n` frames in batches of `batch` rows; frame `i` shows `i` and `-i` (and
    /// nothing for its last channel when odd).
    fn write(format: TableFormat, n: u32, batch: usize) -> Vec<u8> {
        let channels: Vec<String> = NAMES.iter().map(|&s| s.to_owned()).collect();
        let mut out = Vec::new();
        let mut w = TimelineWriter::new(&mut out, format, &channels)
            .unwrap()
            .batch_rows(batch);
        for i in 0..n {
            let v = [f64::from(i), -f64::from(i), 0.5];
            let shown = if !i.is_multiple_of(2) {
                &v[..2]
            } else {
                &v[..]
            };
            w.push(&frame(i, shown)).unwrap();
        }
        assert_eq!(w.finish().unwrap(), u64::from(n));
        out
    }

    fn read(format: TableFormat, bytes: Vec<u8>) -> DataFrame {
        let cursor = std::io::Cursor::new(bytes);
        match format {
            TableFormat::Csv => CsvReadOptions::default()
                .with_has_header(true)
                .into_reader_with_file_handle(cursor)
                .finish()
                .unwrap(),
            TableFormat::Parquet => ParquetReader::new(cursor).finish().unwrap(),
            TableFormat::Ndjson => panic!("these tests read CSV and Parquet"),
        }
    }

    /// Channel names with a comma and a quote survive the CSV as one header field each (read
    /// back with the csv crate); a channel named like a fixed column is renamed, not
    /// duplicated; every documented column is there, in order, with its values (polars).
    #[test]
    fn csv_quotes_names_and_keeps_every_column() {
        let bytes = write(TableFormat::Csv, 10, 4);
        let mut reader = csv::Reader::from_reader(bytes.as_slice());
        let header: Vec<String> = reader
            .headers()
            .unwrap()
            .iter()
            .map(str::to_owned)
            .collect();
        let mut expected: Vec<&str> = FRAME_COLUMNS.to_vec();
        expected.extend(["x, left", "say \"hi\"", "value_2"]);
        assert_eq!(header, expected);
        let rows: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
        assert!(rows.iter().all(|r| r.len() == expected.len()));
        assert_eq!(&rows[3][14], "3.0");
        let mut df = read(TableFormat::Csv, bytes);
        df.set_column_names(&expected).unwrap();
        assert_eq!(df.height(), 10);
        let col = |n: &str| df.column(n).unwrap().clone();
        let left = col("x, left");
        let quote = col("say \"hi\"");
        for i in 0..10 {
            assert_eq!(left.get(i).unwrap().try_extract::<f64>().unwrap(), i as f64);
            assert_eq!(
                quote.get(i).unwrap().try_extract::<f64>().unwrap(),
                -(i as f64)
            );
        }
        assert!(col("value_2").get(1).unwrap().is_null());
        assert_eq!(
            col("frozen").get(7).unwrap(),
            AnyValue::Boolean(true),
            "row 7 is frozen"
        );
        assert_eq!(
            col("buffer_delay_ms")
                .get(3)
                .unwrap()
                .try_extract::<f64>()
                .unwrap(),
            100.0
        );
        assert_eq!(col("hold").get(3).unwrap().get_str(), Some("gap"));
        assert!(col("hold").get(1).unwrap().is_null());
    }

    /// The Parquet, written in several row groups, reads back with the same rows as the CSV.
    #[test]
    fn parquet_holds_the_same_rows_as_the_csv() {
        let csv = read(TableFormat::Csv, write(TableFormat::Csv, 1000, 300));
        let parquet = read(TableFormat::Parquet, write(TableFormat::Parquet, 1000, 300));
        let groups =
            ParquetReader::new(std::io::Cursor::new(write(TableFormat::Parquet, 1000, 300)))
                .get_metadata()
                .unwrap()
                .row_groups
                .len();
        assert_eq!(groups, 4, "one row group per batch of 300");
        assert_eq!(csv.shape(), parquet.shape());
        let names = |df: &DataFrame| -> Vec<String> {
            df.get_column_names()
                .iter()
                .map(|n| n.replace("\"\"", "\""))
                .collect()
        };
        assert_eq!(names(&csv), names(&parquet));
        for (c, p) in csv.columns().iter().zip(parquet.columns()) {
            for i in 0..csv.height() {
                let (a, b) = (c.get(i).unwrap(), p.get(i).unwrap());
                let same = match (a.extract::<f64>(), b.extract::<f64>()) {
                    (Some(x), Some(y)) => x == y,
                    _ => a.to_string() == b.to_string(),
                };
                assert!(same, "column {} row {i}: csv {a} parquet {b}", c.name());
            }
        }
    }

    /// A playout timeline: one row per slot, `late` and `lost` told apart, in either format.
    #[test]
    fn playout_rows_name_each_slot() {
        for format in [TableFormat::Csv, TableFormat::Parquet] {
            let mut out = Vec::new();
            let mut w = PlayoutTimelineWriter::new(&mut out, format).unwrap();
            let at = Nanos::from_millis(60);
            w.push(3, &PlayoutEvent::Played { seq: 1, at }).unwrap();
            w.push(
                3,
                &PlayoutEvent::Concealed {
                    seq: 2,
                    at,
                    arrived_late: true,
                },
            )
            .unwrap();
            w.push(
                3,
                &PlayoutEvent::Concealed {
                    seq: 3,
                    at,
                    arrived_late: false,
                },
            )
            .unwrap();
            assert_eq!(w.finish().unwrap(), 3);
            let df = read(format, out);
            let names: Vec<&str> = df.get_column_names().iter().map(|n| n.as_str()).collect();
            assert_eq!(names, PLAYOUT_COLUMNS);
            let events: Vec<String> = (0..3)
                .map(|i| {
                    df.column("event")
                        .unwrap()
                        .get(i)
                        .unwrap()
                        .get_str()
                        .unwrap()
                        .to_owned()
                })
                .collect();
            assert_eq!(events, ["played", "late", "lost"], "{format:?}");
        }
    }

    #[test]
    fn formats_come_from_extensions() {
        use std::path::Path;
        assert_eq!(
            TableFormat::from_path(Path::new("a.CSV")),
            Some(TableFormat::Csv)
        );
        assert_eq!(
            TableFormat::from_path(Path::new("a.parquet")),
            Some(TableFormat::Parquet)
        );
        assert_eq!(
            TableFormat::from_path(Path::new("a.jsonl")),
            Some(TableFormat::Ndjson)
        );
        assert_eq!(TableFormat::from_path(Path::new("dir/a.txt")), None);
    }
}
