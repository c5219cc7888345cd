//! Screenshots: the PNG of `screencap -p`, scaled down and encoded as JPEG like the web
//! device's.
//!
//! The scaling is a box filter written here (each output pixel averages the source pixels it
//! covers): screenshots only ever shrink, by factors of two to five, where a box filter is as
//! good as a windowed one and a resize crate would add SIMD code paths for nothing.

use crate::device::{DeviceError, Screenshot};

/// Screenshots larger than this are refused rather than decoded (a 4K phone is 33 MB).
const MAX_PIXELS: u64 = 40_000_000;

/// Decodes `png`, scales it to at most `max_width_dp` dp wide (`scale` pixels per dp; the
/// result is never wider than the source), and encodes it as JPEG at `quality`.
pub fn png_to_jpeg(
    png: &[u8],
    max_width_dp: u32,
    quality: u8,
    scale: f64,
) -> Result<Screenshot, DeviceError> {
    let failed = |what: String| DeviceError::Failed(format!("screenshot: {what}"));
    let mut decoder = png::Decoder::new(std::io::Cursor::new(png));
    decoder.set_transformations(png::Transformations::normalize_to_color8());
    let mut reader = decoder
        .read_info()
        .map_err(|error| failed(format!("`screencap -p` did not give a PNG ({error})")))?;
    let (width, height) = {
        let info = reader.info();
        (info.width, info.height)
    };
    if u64::from(width) * u64::from(height) > MAX_PIXELS || width == 0 || height == 0 {
        return Err(failed(format!(
            "a {width}x{height} screen is not plausible"
        )));
    }
    let size = reader
        .output_buffer_size()
        .ok_or_else(|| failed("the PNG is too large".into()))?;
    let mut buffer = vec![0u8; size];
    let frame = reader
        .next_frame(&mut buffer)
        .map_err(|error| failed(format!("the PNG is damaged ({error})")))?;
    let channels = frame.color_type.samples();
    let rgb = to_rgb(
        &buffer[..frame.buffer_size()],
        channels,
        frame.line_size,
        width,
        height,
    )
    .ok_or_else(|| failed(format!("unexpected PNG colour type {:?}", frame.color_type)))?;
    let wanted_px = (f64::from(max_width_dp) * scale.max(0.1)).round();
    let target_width = if wanted_px >= f64::from(width) {
        width
    } else {
        (wanted_px as u32).max(1)
    };
    let target_height =
        ((u64::from(height) * u64::from(target_width)) / u64::from(width)).max(1) as u32;
    let scaled = box_scale(&rgb, width, height, target_width, target_height);
    let mut jpeg = Vec::new();
    let encoder = jpeg_encoder::Encoder::new(&mut jpeg, quality.clamp(1, 100));
    let (encoded_width, encoded_height) = (
        u16::try_from(target_width).map_err(|_| failed("the image is too wide".into()))?,
        u16::try_from(target_height).map_err(|_| failed("the image is too tall".into()))?,
    );
    encoder
        .encode(
            &scaled,
            encoded_width,
            encoded_height,
            jpeg_encoder::ColorType::Rgb,
        )
        .map_err(|error| failed(format!("JPEG encoding ({error})")))?;
    Ok(Screenshot {
        jpeg,
        width: target_width,
        height: target_height,
    })
}

/// Packed RGB from 8-bit gray, gray+alpha, RGB or RGBA rows.
fn to_rgb(data: &[u8], channels: usize, line: usize, width: u32, height: u32) -> Option<Vec<u8>> {
    let (width, height) = (width as usize, height as usize);
    let mut rgb = Vec::with_capacity(width * height * 3);
    for row in 0..height {
        let start = row * line;
        let pixels = data.get(start..start + width * channels)?;
        for pixel in pixels.chunks_exact(channels) {
            match channels {
                1 | 2 => rgb.extend_from_slice(&[pixel[0], pixel[0], pixel[0]]),
                3 | 4 => rgb.extend_from_slice(&pixel[..3]),
                _ => return None,
            }
        }
    }
    Some(rgb)
}

/// Averages the source pixels each target pixel covers.
fn box_scale(rgb: &[u8], width: u32, height: u32, to_width: u32, to_height: u32) -> Vec<u8> {
    if (width, height) == (to_width, to_height) {
        return rgb.to_vec();
    }
    let (width, height) = (width as usize, height as usize);
    let (to_width, to_height) = (to_width as usize, to_height as usize);
    let mut out = Vec::with_capacity(to_width * to_height * 3);
    for ty in 0..to_height {
        let y0 = ty * height / to_height;
        let y1 = ((ty + 1) * height / to_height).max(y0 + 1).min(height);
        for tx in 0..to_width {
            let x0 = tx * width / to_width;
            let x1 = ((tx + 1) * width / to_width).max(x0 + 1).min(width);
            let mut sum = [0u64; 3];
            for y in y0..y1 {
                let row = &rgb[(y * width + x0) * 3..(y * width + x1) * 3];
                for pixel in row.chunks_exact(3) {
                    sum[0] += u64::from(pixel[0]);
                    sum[1] += u64::from(pixel[1]);
                    sum[2] += u64::from(pixel[2]);
                }
            }
            let count = ((y1 - y0) * (x1 - x0)) as u64;
            out.extend(sum.iter().map(|total| (total / count) as u8));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn png_of(width: u32, height: u32, pixel: impl Fn(u32, u32) -> [u8; 4]) -> Vec<u8> {
        let mut out = Vec::new();
        {
            let mut encoder = png::Encoder::new(&mut out, width, height);
            encoder.set_color(png::ColorType::Rgba);
            encoder.set_depth(png::BitDepth::Eight);
            let Ok(mut writer) = encoder.write_header() else {
                return Vec::new();
            };
            let mut data = Vec::new();
            for y in 0..height {
                for x in 0..width {
                    data.extend_from_slice(&pixel(x, y));
                }
            }
            if writer.write_image_data(&data).is_err() {
                return Vec::new();
            }
        }
        out
    }

    #[test]
    fn a_screencap_becomes_a_scaled_jpeg() {
        let png = png_of(1080, 2340, |x, _| {
            if x < 540 {
                [255, 0, 0, 255]
            } else {
                [0, 0, 255, 255]
            }
        });
        // 2.75 px per dp: 200 dp wide is 550 px.
        let shot = png_to_jpeg(&png, 200, 70, 2.75).map_err(|e| e.to_string());
        let Ok(shot) = shot else {
            panic!("{shot:?}");
        };
        assert_eq!((shot.width, shot.height), (550, 1191));
        assert_eq!(&shot.jpeg[..3], &[0xff, 0xd8, 0xff]);
        // Never wider than the screen.
        let full = png_to_jpeg(&png, 10_000, 70, 2.75).map_err(|e| e.to_string());
        assert_eq!(full.map(|shot| (shot.width, shot.height)), Ok((1080, 2340)));
    }

    #[test]
    fn box_scaling_averages() {
        let rgb = [0, 0, 0, 255, 255, 255, 0, 0, 0, 255, 255, 255];
        assert_eq!(box_scale(&rgb, 2, 2, 1, 1), vec![127, 127, 127]);
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        let error = png_to_jpeg(b"not a png", 100, 70, 2.0)
            .err()
            .map(|e| e.to_string());
        assert!(error.is_some_and(|error| error.contains("did not give a PNG")));
    }
}
