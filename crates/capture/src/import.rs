//! Importers that turn users' own logs into traces. CSV now; pcap and pcapng in the capture issue.

use std::collections::HashSet;
use std::io::Read;

use crate::Error;
use crate::decode::probe::{MAX_VALUES, Probe};
use crate::time::Nanos;
use crate::trace::{Clock, Header, Record, Source};

/// A CSV log converted to trace records, ready to write.
#[derive(Clone, Debug)]
pub struct Imported {
    /// The header to write (decoder `probe`, value channel names in the `channels` hint).
    pub header: Header,
    /// The records in file order: received packets by arrival time; ground truth (as sent),
    /// interleaved by send time, when the log lists packets that never arrived.
    pub records: Vec<Record>,
    /// How many rows had no arrival time (sent, never received).
    pub lost_rows: u64,
}

const REQUIRED: [&str; 3] = ["seq", "send_ms", "arrival_ms"];

/// Reads a CSV log: a header row with `stream` (optional), `seq`, `send_ms`, `arrival_ms`
/// and any number of value columns.
///
/// Each row becomes a `probe` packet received at `arrival_ms` (local clock, ms) carrying
/// `send_ms` (sender clock, ms), `seq` and the values. An empty `arrival_ms` marks a packet that
/// was sent but never arrived; then every row is also written as ground truth.
///
/// # Errors
/// [`Error::Csv`] naming the line and column of the first malformed row or header.
pub fn import_csv<R: Read>(input: R, source_name: &str) -> Result<Imported, Error> {
    let mut rdr = csv::ReaderBuilder::new()
        .has_headers(true)
        .trim(csv::Trim::All)
        .from_reader(input);
    let header_row = rdr
        .headers()
        .map_err(|e| csv_error(&e, "the header row"))?
        .clone();
    let names: Vec<&str> = header_row.iter().collect();
    let mut seen = HashSet::new();
    for (i, name) in names.iter().enumerate() {
        if name.is_empty() {
            return Err(Error::Csv {
                line: 1,
                column: format!("{}", i + 1),
                reason: "empty column name in the header row".into(),
            });
        }
        if !seen.insert(*name) {
            return Err(Error::Csv {
                line: 1,
                column: (*name).to_owned(),
                reason: "column name appears twice".into(),
            });
        }
    }
    let find = |want: &str| names.iter().position(|n| *n == want);
    let mut idx = [0usize; 3];
    for (slot, want) in idx.iter_mut().zip(REQUIRED) {
        *slot = find(want).ok_or_else(|| Error::Csv {
            line: 1,
            column: want.to_owned(),
            reason: format!(
                "required column is missing (header has: {})",
                names.join(",")
            ),
        })?;
    }
    let [seq_i, send_i, arrival_i] = idx;
    let stream_i = find("stream");
    let value_cols: Vec<usize> = (0..names.len())
        .filter(|i| ![Some(seq_i), Some(send_i), Some(arrival_i), stream_i].contains(&Some(*i)))
        .collect();
    // The trace keeps channel names in one comma-separated hint: a comma would split the
    // channel in two there.
    if let Some(&i) = value_cols.iter().find(|&&i| names[i].contains(',')) {
        return Err(Error::Csv {
            line: 1,
            column: format!("{} ('{}')", i + 1, names[i]),
            reason: "a value column's name cannot hold a comma".to_owned(),
        });
    }
    if value_cols.len() > MAX_VALUES {
        return Err(Error::Csv {
            line: 1,
            column: names[value_cols[MAX_VALUES]].to_owned(),
            reason: format!("more than {MAX_VALUES} value columns"),
        });
    }

    let mut rows: Vec<(Option<Nanos>, Probe)> = Vec::new();
    for result in rdr.records() {
        let row = result.map_err(|e| csv_error(&e, "a row"))?;
        let line = row.position().map_or(0, csv::Position::line);
        let field = |i: usize| row.get(i).unwrap_or("");
        let bad = |i: usize, reason: String| Error::Csv {
            line,
            column: names[i].to_owned(),
            reason,
        };
        let number = |i: usize| -> Result<f64, Error> {
            let text = field(i);
            let v: f64 = text
                .parse()
                .map_err(|_| bad(i, format!("'{text}' is not a number")))?;
            if v.is_finite() {
                Ok(v)
            } else {
                Err(bad(i, format!("'{text}' is not a finite number")))
            }
        };
        let seq_text = field(seq_i);
        let tick: u64 = seq_text
            .parse()
            .ok()
            .filter(|&t: &u64| i64::try_from(t).is_ok())
            .ok_or_else(|| bad(seq_i, format!("'{seq_text}' is not a whole number ≥ 0")))?;
        let stream = match stream_i {
            Some(i) => {
                let text = field(i);
                text.parse::<u32>()
                    .map_err(|_| bad(i, format!("'{text}' is not a stream id (0..=4294967295)")))?
            }
            None => 0,
        };
        let send = Nanos::from_millis_f64(number(send_i)?);
        let arrival = if field(arrival_i).is_empty() {
            None
        } else {
            Some(Nanos::from_millis_f64(number(arrival_i)?))
        };
        let values = value_cols
            .iter()
            .map(|&i| number(i))
            .collect::<Result<Vec<_>, _>>()?;
        rows.push((
            arrival,
            Probe {
                stream,
                tick,
                send,
                state: 0,
                event: None,
                values: values.into(),
            },
        ));
    }

    let lost_rows = rows.iter().filter(|(a, _)| a.is_none()).count() as u64;
    // (time, order class, row index): received rows by arrival, truth rows by send time.
    let mut order: Vec<(Nanos, u8, usize)> = Vec::new();
    for (i, (arrival, probe)) in rows.iter().enumerate() {
        if let Some(a) = arrival {
            order.push((*a, 1, i));
        }
        if lost_rows > 0 {
            order.push((probe.send, 0, i));
        }
    }
    order.sort();
    let records = order
        .into_iter()
        .map(|(time, class, i)| {
            let payload = rows[i].1.emit();
            if class == 0 {
                Record::sent(time, payload)
            } else {
                Record::received(time, payload)
            }
        })
        .collect();

    let mut header = Header::new(
        Clock {
            name: "csv".into(),
            realtime_offset_ns: None,
        },
        Source {
            kind: "csv".into(),
            detail: source_name.to_owned(),
        },
    );
    header.decoder = Some("probe".into());
    let channels: Vec<&str> = value_cols.iter().map(|&i| names[i]).collect();
    header.hints.insert("channels".into(), channels.join(","));
    Ok(Imported {
        header,
        records,
        lost_rows,
    })
}

fn csv_error(err: &csv::Error, what: &str) -> Error {
    let line = err.position().map_or(0, csv::Position::line);
    let reason = match err.kind() {
        csv::ErrorKind::UnequalLengths {
            expected_len, len, ..
        } => format!("expected {expected_len} fields, found {len}"),
        csv::ErrorKind::Utf8 { .. } => "not valid UTF-8 text".to_owned(),
        _ => format!("cannot read {what}: {err}"),
    };
    Error::Csv {
        line,
        column: "-".into(),
        reason,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::{DecoderConfig, DecoderKind, StreamDecoder};

    #[test]
    fn imports_the_seed_vector() {
        let csv = "seq,send_ms,arrival_ms,value\n3,150,151,15\n1,50,152,5\n2,100,153,10\n";
        let imported = import_csv(csv.as_bytes(), "seed.csv").unwrap();
        assert_eq!(imported.records.len(), 3);
        assert_eq!(imported.lost_rows, 0);
        assert_eq!(imported.header.hints["channels"], "value");
        let mut dec = StreamDecoder::new(DecoderConfig::new(DecoderKind::Probe), vec![]);
        let first = dec.decode(&imported.records[0]).unwrap();
        assert_eq!(
            (first.seq, first.send, first.arrival),
            (3, Nanos::from_millis(150), Nanos::from_millis(151))
        );
        assert_eq!(first.values[..], [15.0]);
    }

    /// A value column whose name the trace's channel list cannot hold (a comma) is refused,
    /// not split into two channels; a quote is kept.
    #[test]
    fn channel_names_with_commas_are_refused_and_quotes_kept() {
        let csv = "seq,send_ms,arrival_ms,\"x, left\",y\n1,0,1,2,3\n";
        let err = import_csv(csv.as_bytes(), "c.csv").unwrap_err().to_string();
        assert!(
            err.contains("column 4 ('x, left')") && err.contains("comma"),
            "{err}"
        );
        let csv = "seq,send_ms,arrival_ms,\"say \"\"hi\"\"\",y\n1,0,1,2,3\n";
        let imported = import_csv(csv.as_bytes(), "c.csv").unwrap();
        assert_eq!(imported.header.hints["channels"], "say \"hi\",y");
    }

    /// C2: sequence, send time (sender clock) and arrival time (local clock) are separate
    /// fields all the way from the log to the decoded sample.
    #[test]
    fn c02_seq_send_and_arrival_stay_separate() {
        let csv = "seq,send_ms,arrival_ms,v\n41,1000.5,7.25,1\n";
        let imported = import_csv(csv.as_bytes(), "c2.csv").unwrap();
        let rec = &imported.records[0];
        assert_eq!(rec.time, Nanos::from_micros(7_250));
        let mut dec = StreamDecoder::new(DecoderConfig::new(DecoderKind::Probe), vec![]);
        let s = dec.decode(rec).unwrap();
        assert_eq!(s.seq, 41);
        assert_eq!(s.send, Nanos::from_micros(1_000_500));
        assert_eq!(s.arrival, Nanos::from_micros(7_250));
    }

    #[test]
    fn empty_arrival_is_ground_truth() {
        let csv = "stream,seq,send_ms,arrival_ms,x,y\n0,1,0,5,1,2\n0,2,50,,3,4\n";
        let imported = import_csv(csv.as_bytes(), "t.csv").unwrap();
        assert_eq!(imported.lost_rows, 1);
        let kinds: Vec<u8> = imported.records.iter().map(|r| r.kind.code()).collect();
        assert_eq!(kinds, vec![1, 0, 1]); // sent@0, received@5, sent@50
    }

    #[test]
    fn malformed_rows_name_line_and_column() {
        let err =
            import_csv("seq,send_ms,arrival_ms\n1,2,3\n2,abc,4\n".as_bytes(), "x").unwrap_err();
        assert_eq!(
            err.to_string(),
            "CSV line 3, column send_ms: 'abc' is not a number"
        );
        let err = import_csv("seq,send_ms,arrival_ms\n1,2\n".as_bytes(), "x").unwrap_err();
        assert!(
            err.to_string().contains("line 2") && err.to_string().contains("expected 3 fields"),
            "{err}"
        );
        let err = import_csv("seq,send_ms\n1,2\n".as_bytes(), "x").unwrap_err();
        assert!(err.to_string().contains("arrival_ms"), "{err}");
        let err = import_csv("seq,send_ms,arrival_ms,v\n-1,2,3,4\n".as_bytes(), "x").unwrap_err();
        assert!(err.to_string().contains("column seq"), "{err}");
        let err = import_csv("seq,send_ms,arrival_ms,v\n1,2,3,NaN\n".as_bytes(), "x").unwrap_err();
        assert!(err.to_string().contains("finite"), "{err}");
    }
}
