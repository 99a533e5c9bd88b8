//! The mirror engine (being built).
