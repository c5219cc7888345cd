//! The fleet server's tools: spec 002's Devices, Device-control and Tasks domains in its
//! snake_case names, each run by a daemon tool on the machine that holds the device.

use crate::tools::ErasedTool;

/// Every fleet tool, in listing order.
pub(crate) const REGISTERED: &[&dyn ErasedTool] = &[];
