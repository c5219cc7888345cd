//! The credential taxonomy of spec 002's "Auth" table, applied before the MCP handler.
