//! The source side of the data path: a fetcher per source broker ([`fetcher`]) with a cursor per
//! partition ([`cursor`]).

pub(crate) mod cursor;
pub(crate) mod fetcher;
