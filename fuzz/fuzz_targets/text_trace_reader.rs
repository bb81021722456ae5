#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| paraclick_fuzz_targets::text_trace_reader(data));
