//! Integration tests: one binary, one shared pair of real Kafka clusters (started on first
//! use by the test kit and stopped when the binary exits), unique topic names per test.

mod client;

mod checkpoints;
mod data_path;
mod deploy;
mod exactly_once;
mod faults;
mod group;
mod import;
mod io;
mod mirror;
mod oauth;
mod operations;
mod page;
mod prometheus;
mod security;
mod supervision;
mod topics;
mod topology;
mod translation;
