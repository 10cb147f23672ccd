//! Tests of the aggregate over hand-built streams.
