//! Baseline limits, before the MCP handler: body size, request deadline, per-IP and per-key
//! token buckets.
