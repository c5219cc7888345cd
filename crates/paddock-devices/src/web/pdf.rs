//! The active tab as a PDF (`Page.printToPDF`).

use base64::Engine as _;
use serde_json::{Value, json};

use super::WebDevice;
use crate::device::DeviceError;

/// The largest PDF `save_pdf` answers.
pub const MAX_PDF_BYTES: usize = 16 * 1024 * 1024;

impl WebDevice {
    /// Prints the active tab to PDF, backgrounds included, and answers its bytes.
    pub async fn save_pdf(&self) -> Result<Vec<u8>, DeviceError> {
        let result = self
            .call(
                "Page.printToPDF",
                json!({ "printBackground": true, "transferMode": "ReturnAsBase64" }),
            )
            .await?;
        let data = result
            .get("data")
            .and_then(Value::as_str)
            .ok_or_else(|| DeviceError::Failed("the browser answered no PDF".into()))?;
        // Base64 is 4 characters for 3 bytes: a longer text cannot fit the limit.
        if data.len() / 4 * 3 > MAX_PDF_BYTES + 3 {
            return Err(DeviceError::InvalidInput(format!(
                "the page's PDF is over the {MAX_PDF_BYTES}-byte limit"
            )));
        }
        base64::engine::general_purpose::STANDARD
            .decode(data)
            .map_err(|error| {
                DeviceError::Failed(format!("the browser's PDF is not base64: {error}"))
            })
    }
}
