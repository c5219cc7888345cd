//! `screencap`: the display drawn from the window's tree. Each widget is a filled rectangle
//! whose colour comes from its class, text and state, with a row of marks standing for its
//! text, over the status and navigation bars; two different screens, or one screen before and
//! after typing, give different images. The PNG is RGBA, as `screencap -p` writes.

use super::apps::Display;
use super::ui::{Node, Paint, Rect};

/// An RGBA frame buffer.
#[derive(Debug, Clone)]
pub(crate) struct Frame {
    pub(crate) width: u32,
    pub(crate) height: u32,
    pub(crate) pixels: Vec<u8>,
}

impl Frame {
    fn new(width: u32, height: u32, colour: [u8; 3]) -> Self {
        let mut pixels = Vec::with_capacity(width as usize * height as usize * 4);
        for _ in 0..width as usize * height as usize {
            pixels.extend_from_slice(&[colour[0], colour[1], colour[2], 0xff]);
        }
        Self {
            width,
            height,
            pixels,
        }
    }

    fn fill(&mut self, rect: Rect, colour: [u8; 3]) {
        let clipped = rect.intersect(&Rect::new(
            0,
            0,
            i32::try_from(self.width).unwrap_or(i32::MAX),
            i32::try_from(self.height).unwrap_or(i32::MAX),
        ));
        if clipped.is_empty() {
            return;
        }
        let row_pixel = [colour[0], colour[1], colour[2], 0xff];
        let width = self.width as usize;
        for y in clipped.top..clipped.bottom {
            let start = (y as usize * width + clipped.left as usize) * 4;
            let end = (y as usize * width + clipped.right as usize) * 4;
            for pixel in self.pixels[start..end].chunks_exact_mut(4) {
                pixel.copy_from_slice(&row_pixel);
            }
        }
    }

    /// The frame as a PNG file (RGBA, 8 bits per channel).
    pub(crate) fn png(&self) -> Result<Vec<u8>, png::EncodingError> {
        let mut bytes = Vec::new();
        {
            let mut encoder = png::Encoder::new(&mut bytes, self.width, self.height);
            encoder.set_color(png::ColorType::Rgba);
            encoder.set_depth(png::BitDepth::Eight);
            // The image is flat colour: the fastest setting compresses it well, and a test
            // build of the encoder is slow at the higher ones.
            encoder.set_compression(png::Compression::Fastest);
            let mut writer = encoder.write_header()?;
            writer.write_image_data(&self.pixels)?;
            writer.finish()?;
        }
        Ok(bytes)
    }
}

/// A colour from a hash of what a widget shows, kept away from the extremes so marks on it
/// stay visible.
fn widget_colour(node: &Node) -> [u8; 3] {
    let mut hash: u32 = 0x811c_9dc5;
    let mut feed = |bytes: &[u8]| {
        for byte in bytes {
            hash ^= u32::from(*byte);
            hash = hash.wrapping_mul(0x0100_0193);
        }
    };
    feed(node.class.as_bytes());
    feed(node.text.as_bytes());
    feed(node.content_desc.as_bytes());
    feed(&[
        u8::from(node.checked),
        u8::from(node.focused),
        u8::from(node.selected),
    ]);
    let channel = |shift: u32| 0x40 + ((hash >> shift) & 0xff) as u8 / 2;
    [channel(0), channel(8), channel(16)]
}

/// One mark per character of `text`, its shade from the character, along the widget's middle.
fn draw_text(frame: &mut Frame, bounds: Rect, text: &str) {
    let height = (bounds.height() / 3).clamp(1, 40);
    let top = bounds.top + (bounds.height() - height) / 2;
    let mut left = bounds.left + 12;
    for c in text.chars() {
        if left + 14 > bounds.right {
            break;
        }
        if c != ' ' {
            let code = c as u32;
            let shade = [
                (code.wrapping_mul(37) & 0x7f) as u8,
                (code.wrapping_mul(91) & 0x7f) as u8,
                (code.wrapping_mul(53) & 0x7f) as u8,
            ];
            frame.fill(Rect::new(left, top, left + 12, top + height), shade);
        }
        left += 16;
    }
}

fn draw_node(frame: &mut Frame, node: &Node) {
    match node.paint {
        Paint::None => {}
        Paint::Solid(colour) => frame.fill(node.bounds, colour),
        Paint::Widget => {
            frame.fill(node.bounds.inset(2, 2), widget_colour(node));
            draw_text(frame, node.bounds, &node.text);
        }
    }
    for child in &node.children {
        draw_node(frame, child);
    }
}

/// The display showing `root`, with the system bars drawn over it.
pub(crate) fn render(root: &Node, display: &Display) -> Frame {
    let width = u32::try_from(display.width).unwrap_or(1);
    let height = u32::try_from(display.height).unwrap_or(1);
    let mut frame = Frame::new(width, height, [0xff, 0xff, 0xff]);
    draw_node(&mut frame, root);
    let status = display.status_bar();
    frame.fill(status, [0x20, 0x20, 0x20]);
    // The clock and the battery.
    draw_text(
        &mut frame,
        Rect::new(
            status.left + 30,
            status.top,
            status.left + 200,
            status.bottom,
        ),
        "12:00",
    );
    frame.fill(
        Rect::new(
            status.right - 90,
            status.top + 18,
            status.right - 40,
            status.bottom - 18,
        ),
        [0xe0, 0xe0, 0xe0],
    );
    let nav = display.nav_bar();
    frame.fill(nav, [0x00, 0x00, 0x00]);
    let (cx, cy) = nav.center();
    let buttons: [(i32, i32); 3] = if nav.width() >= nav.height() {
        [
            (cx - nav.width() / 4, cy),
            (cx, cy),
            (cx + nav.width() / 4, cy),
        ]
    } else {
        [
            (cx, cy + nav.height() / 4),
            (cx, cy),
            (cx, cy - nav.height() / 4),
        ]
    };
    for (x, y) in buttons {
        frame.fill(
            Rect::new(x - 20, y - 20, x + 20, y + 20),
            [0xd0, 0xd0, 0xd0],
        );
    }
    frame
}

/// The raw `screencap` format of Android 11: width, height, pixel format (1, RGBA_8888) and
/// data space (0, unknown) as little-endian 32-bit words, then the pixels.
pub(crate) fn raw(frame: &Frame) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(16 + frame.pixels.len());
    for word in [frame.width, frame.height, 1, 0] {
        bytes.extend_from_slice(&word.to_le_bytes());
    }
    bytes.extend_from_slice(&frame.pixels);
    bytes
}
