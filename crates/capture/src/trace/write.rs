//! Writing traces: the header, then one record per call.

use std::io::{self, Write};

use crate::Error;
use crate::trace::{Header, Record};

/// Writes a trace: the header at creation, then one record per call.
///
/// Records go straight to the inner writer; wrap it in a `BufWriter` and call
/// [`Writer::flush`] on a timer to bound what a crash can lose.
#[derive(Debug)]
pub struct Writer<W: Write> {
    out: W,
    records: u64,
    /// One record is encoded here, then written with a single call (MessagePack encoders
    /// issue a write per field, which costs more than the encoding through most writers).
    scratch: Vec<u8>,
}

impl<W: Write> Writer<W> {
    /// Writes `header` and returns a writer for the records.
    ///
    /// # Errors
    /// I/O errors from `out`.
    pub fn new(mut out: W, header: &Header) -> Result<Self, Error> {
        rmp_serde::encode::write_named(&mut out, header).map_err(encode_error)?;
        Ok(Self {
            out,
            records: 0,
            scratch: Vec::with_capacity(256),
        })
    }

    /// Appends one record.
    ///
    /// # Errors
    /// I/O errors from the inner writer.
    pub fn write(&mut self, record: &Record) -> Result<(), Error> {
        self.scratch.clear();
        record.emit(&mut self.scratch);
        self.out.write_all(&self.scratch)?;
        self.records += 1;
        Ok(())
    }

    /// How many records were written.
    pub fn records(&self) -> u64 {
        self.records
    }

    /// Flushes the inner writer.
    ///
    /// # Errors
    /// I/O errors from the inner writer.
    pub fn flush(&mut self) -> Result<(), Error> {
        self.out.flush().map_err(Error::Io)
    }

    /// The inner writer (not flushed).
    pub fn into_inner(self) -> W {
        self.out
    }
}

fn encode_error(err: rmp_serde::encode::Error) -> Error {
    match err {
        rmp_serde::encode::Error::InvalidValueWrite(
            rmp::encode::ValueWriteError::InvalidMarkerWrite(e),
        )
        | rmp_serde::encode::Error::InvalidValueWrite(
            rmp::encode::ValueWriteError::InvalidDataWrite(e),
        ) => Error::Io(e),
        other => Error::Io(io::Error::other(other.to_string())),
    }
}
