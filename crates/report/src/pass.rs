//! A report of a trace of any length in two passes over the file, as the decoder hands its
//! samples over ([`SampleSink`]): [`SurveyPass`] surveys every stream, then [`ReportPass`]
//! draws the chosen stream's figures and replays it through the configurations shown, both
//! in memory that follows the figures' width and the replay's window, not the trace.
//!
//! The figures are those a report of the whole trace in memory draws ([`TraceFigures::of`],
//! [`crate::run_policies`]); the tests compare them.

use jitterlab_capture::decode::{Sample, SampleSink, StreamInfo};
use jitterlab_replay::{ClockMapping, FrameClock, Policy, Unstreamable};

use crate::runs::{Run, RunsPass};
use crate::trace::{Drawing, Survey, Surveyed, TraceFigures};

/// The first pass: a [`Survey`] of every stream's received samples, by the reader's stream
/// number ([`Sample::stream`]).
#[derive(Debug, Default)]
pub struct SurveyPass {
    surveys: Vec<Option<Survey>>,
}

impl SurveyPass {
    /// The survey of stream `stream` (the reader's number), if it received anything.
    pub fn take(&mut self, stream: u32) -> Option<Survey> {
        self.surveys.get_mut(stream as usize).and_then(Option::take)
    }
}

impl SampleSink for SurveyPass {
    fn samples(&mut self, samples: &mut Vec<Sample>, truth: bool, _: &[StreamInfo]) {
        if truth {
            return;
        }
        for s in samples.iter() {
            let id = s.stream as usize;
            if self.surveys.len() <= id {
                self.surveys.resize_with(id + 1, || None);
            }
            self.surveys[id].get_or_insert_with(Survey::default).push(s);
        }
    }
}

/// The second pass over one stream (the reader's number): its figures ([`Drawing`]) and its
/// replays ([`RunsPass`]).
#[derive(Debug)]
pub struct ReportPass {
    stream: u32,
    drawing: Drawing,
    runs: RunsPass,
}

impl ReportPass {
    /// A pass over stream `stream` (the reader's number), surveyed as `survey`, replayed
    /// through `policies` (labelled) at `frames` with the clock mapping `clock`.
    ///
    /// # Errors
    /// What needs the whole stream ([`Unstreamable`]).
    pub fn new(
        stream: u32,
        survey: Surveyed,
        policies: &[(String, Policy)],
        frames: &FrameClock,
        clock: ClockMapping,
    ) -> Result<Self, Unstreamable> {
        let runs = RunsPass::new(stream, policies, frames, clock, &survey)?;
        Ok(Self {
            stream,
            drawing: Drawing::new(survey),
            runs,
        })
    }

    /// The figures (titled `title`) and runs, once the trace is over.
    ///
    /// # Errors
    /// The stream broke an assumption of the replay's pass ([`Unstreamable`]): replay it in
    /// memory.
    pub fn finish(self, title: &str) -> Result<(TraceFigures, Vec<Run>), Unstreamable> {
        let runs = self.runs.finish()?;
        Ok((self.drawing.finish(title), runs))
    }
}

impl SampleSink for ReportPass {
    fn samples(&mut self, samples: &mut Vec<Sample>, truth: bool, streams: &[StreamInfo]) {
        for s in samples.drain(..) {
            if s.stream != self.stream {
                continue;
            }
            if !truth {
                self.drawing.push(&s);
            }
            let channels = streams
                .get(s.stream as usize)
                .map(|i| i.channels.as_slice());
            self.runs.push(s, truth, channels);
        }
    }
}
