//! mm2.properties parsing, replication policies and filters (being built).
