#![no_main]
//! Fuzz target; the oracle lives in `hudi_sink_fuzz::check_avro_to_arrow` so that `cargo test` replays the corpus too.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| hudi_sink_fuzz::check_avro_to_arrow(data));
