//! The working state of one hinting call: the slices, the events and notes so far, and the
//! controller's memory; shared by the `Auto` and `trafficDistribution` paths.
//!
//! svcnet's own (no Go counterpart in Kubernetes v1.37.2).

use std::sync::Arc;

use crate::event::{Event, EventType, REASON_DISABLED, message};
use crate::report::{Decision, RemovalReason, SliceNote, SliceReason};
use crate::slice_set::{SliceSet, slice_name};

/// The working state of one call.
pub(crate) struct Ctx<'a> {
    pub(crate) address_type: &'a str,
    pub(crate) set: SliceSet,
    pub(crate) events: Vec<Event>,
    pub(crate) notes: Vec<SliceNote>,
    pub(crate) populated: bool,
}

impl Ctx<'_> {
    /// The annotation no longer applies: if it had populated hints, say they are disabled.
    pub(crate) fn forget_populated(&mut self) {
        if self.populated {
            self.events.push(Event::new(
                EventType::Warning,
                REASON_DISABLED,
                message::HINTS_DISABLED,
                self.address_type,
            ));
        }
        self.populated = false;
    }

    /// Clears every hint: in slices being created or updated, and in unchanged slices that
    /// carry any (those move to the updates).
    pub(crate) fn remove_hints(&mut self) {
        for s in self.set.to_create.iter_mut().chain(self.set.to_update.iter_mut()) {
            let s = Arc::make_mut(s);
            for ep in s.endpoints.iter_mut().flatten() {
                ep.hints = None;
            }
        }
        let unchanged = std::mem::take(&mut self.set.unchanged);
        for mut s in unchanged {
            if s.endpoints().iter().any(|e| e.hints.is_some()) {
                for ep in Arc::make_mut(&mut s).endpoints.iter_mut().flatten() {
                    ep.hints = None;
                }
                self.notes.push(SliceNote {
                    slice: slice_name(&s),
                    reason: SliceReason::HintsRemoved,
                });
                self.set.to_update.push(s);
            } else {
                self.set.unchanged.push(s);
            }
        }
    }

    /// Removes every hint for `reason` and records its warning.
    pub(crate) fn remove_for(&mut self, reason: RemovalReason) -> Decision {
        self.events.push(reason.event(self.address_type));
        self.populated = false;
        self.remove_hints();
        Decision::Removed { reason }
    }
}
