//! The annotated image: the capture, downscaled to what models see (and optionally to a width
//! tier), with a coloured box and an ID label drawn for every element (labels in an embedded 8x8
//! bitmap font, so no font file is needed on any platform), then encoded by quality tier (PNG
//! with fast compression by default, JPEG for the smallest payload).

use image::codecs::jpeg::JpegEncoder;
use image::codecs::png::{CompressionType, FilterType, PngEncoder};
use image::{ExtendedColorType, ImageEncoder, Rgb, RgbImage};
use osprey_types::model_image_size;
use serde::Serialize;

use crate::elements::Element;
use crate::error::{Error, Result};
use crate::geometry::{Point, Rect};

/// How the image is encoded.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Quality {
    /// PNG, fast deflate: lossless, quick, larger. The default.
    #[default]
    Fast,
    /// PNG, default deflate level: lossless and smaller, several times slower.
    Lossless,
    /// JPEG at quality 80: smallest, lossy (labels stay readable).
    Small,
}

impl Quality {
    pub fn parse(text: &str) -> Option<Quality> {
        match text {
            "fast" | "png" => Some(Quality::Fast),
            "lossless" | "best" => Some(Quality::Lossless),
            "small" | "jpeg" | "jpg" => Some(Quality::Small),
            _ => None,
        }
    }
}

/// An encoded image.
#[derive(Clone, Debug)]
pub struct Encoded {
    pub bytes: Vec<u8>,
    pub mime_type: &'static str,
}

/// Encodes an RGB image at a quality tier.
pub fn encode(image: &RgbImage, quality: Quality) -> Result<Encoded> {
    let mut bytes = Vec::with_capacity(image.as_raw().len() / 4);
    let (width, height) = image.dimensions();
    let result = match quality {
        Quality::Fast => {
            PngEncoder::new_with_quality(&mut bytes, CompressionType::Fast, FilterType::Adaptive)
                .write_image(image.as_raw(), width, height, ExtendedColorType::Rgb8)
        }
        Quality::Lossless => {
            PngEncoder::new_with_quality(&mut bytes, CompressionType::Default, FilterType::Adaptive)
                .write_image(image.as_raw(), width, height, ExtendedColorType::Rgb8)
        }
        Quality::Small => JpegEncoder::new_with_quality(&mut bytes, 80).write_image(
            image.as_raw(),
            width,
            height,
            ExtendedColorType::Rgb8,
        ),
    };
    result.map_err(|e| Error::Encode(e.to_string()))?;
    Ok(Encoded {
        bytes,
        mime_type: match quality {
            Quality::Small => "image/jpeg",
            _ => "image/png",
        },
    })
}

/// The capture scaled to at most `max_width` wide and to the size a model takes as it is
/// ([`osprey_types::model_image_size`]: 1920 x 1080 becomes 1456 x 819, what Claude would scale
/// it to before looking, so the points it reads off the image are in this image), never up,
/// with the factor applied.
pub fn downscale(image: &RgbImage, max_width: Option<u32>) -> (RgbImage, f64) {
    let (width, height) = image.dimensions();
    // The width tier first, then the size a model takes of that.
    let tier = match max_width {
        Some(max) if max > 0 && max < width => {
            let height = (f64::from(height) * f64::from(max) / f64::from(width)).round();
            (max, (height as u32).max(1))
        }
        _ => (width, height),
    };
    let (new_width, new_height) = model_image_size(tier.0, tier.1);
    if (new_width, new_height) == (width, height) {
        return (image.clone(), 1.0);
    }
    let scale = f64::from(new_width) / f64::from(width);
    // `thumbnail` averages areas: fast and clean for large reductions.
    (
        image::imageops::thumbnail(image, new_width, new_height),
        scale,
    )
}

/// What [`annotate`] drew, in image pixels, so callers and tests know where pixels changed.
#[derive(Clone, Debug, Default)]
pub struct Drawn {
    /// Per element: its box and its label.
    pub boxes: Vec<(Rect, Rect)>,
}

const PALETTE: [[u8; 3]; 8] = [
    [230, 25, 75],
    [0, 130, 200],
    [60, 180, 75],
    [245, 130, 48],
    [145, 30, 180],
    [0, 128, 128],
    [240, 50, 230],
    [128, 0, 0],
];

fn colour_for(id: &str) -> Rgb<u8> {
    let prefix = id.bytes().next().unwrap_or(b'A');
    Rgb(PALETTE[usize::from(prefix) % PALETTE.len()])
}

fn fill(image: &mut RgbImage, rect: Rect, colour: Rgb<u8>) {
    let bounds = Rect::new(0, 0, image.width(), image.height());
    let Some(r) = rect.intersection(&bounds) else {
        return;
    };
    for y in r.y..r.bottom() {
        for x in r.x..r.right() {
            image.put_pixel(x as u32, y as u32, colour);
        }
    }
}

fn outline(image: &mut RgbImage, rect: Rect, thickness: u32, colour: Rgb<u8>) {
    let t = thickness.min(rect.width / 2).min(rect.height / 2).max(1);
    fill(image, Rect::new(rect.x, rect.y, rect.width, t), colour);
    fill(
        image,
        Rect::new(rect.x, rect.bottom() - t as i32, rect.width, t),
        colour,
    );
    fill(image, Rect::new(rect.x, rect.y, t, rect.height), colour);
    fill(
        image,
        Rect::new(rect.right() - t as i32, rect.y, t, rect.height),
        colour,
    );
}

fn text(image: &mut RgbImage, at: Point, label: &str, scale: u32, colour: Rgb<u8>) {
    let glyph_size = 8 * scale as i32;
    for (index, character) in label.chars().enumerate() {
        let Some(glyph) = font8x8::legacy::BASIC_LEGACY.get(character as usize) else {
            continue;
        };
        let left = at.x + index as i32 * glyph_size;
        for (row, bits) in glyph.iter().enumerate() {
            for column in 0..8 {
                if bits & (1 << column) != 0 {
                    fill(
                        image,
                        Rect::new(
                            left + column * scale as i32,
                            at.y + row as i32 * scale as i32,
                            scale,
                            scale,
                        ),
                        colour,
                    );
                }
            }
        }
    }
}

/// Where an element's label goes: the first place, in order, that stays in the image and covers
/// neither another element's box (one holding this element's does not count) nor a label already
/// placed: above the box at its left or right end; inside its top-right corner when the box is
/// wide (a row's or a field's right end is usually empty); beside it on the right or the left
/// (the left is where a field's caption sits); inside its top-right or top-left corner. In a
/// dense list, above would cover the row before, whose text the model reads off the picture.
/// When no place is free, the one covering least.
fn place_label(rect: Rect, size: (u32, u32), boxes: &[Rect], labels: &[Rect], image: Rect) -> Rect {
    let (width, height) = (size.0 as i32, size.1 as i32);
    let inside_right = (rect.right() - width, rect.y);
    let wide = rect.width >= 3 * size.0;
    let candidates = [
        Some((rect.x, rect.y - height)),
        Some((rect.right() - width, rect.y - height)),
        wide.then_some(inside_right),
        Some((rect.right(), rect.y)),
        Some((rect.x - width, rect.y)),
        Some(inside_right),
        Some((rect.x, rect.y)),
    ];
    let covered = |label: &Rect| -> u64 {
        let area = |r: Option<Rect>| r.map_or(0, |r| u64::from(r.width) * u64::from(r.height));
        let others = boxes
            .iter()
            .filter(|b| **b != rect && !b.contains_rect(&rect))
            .map(|b| area(b.intersection(label)));
        let placed = labels.iter().map(|l| area(l.intersection(label)));
        others.chain(placed).sum()
    };
    let mut best: Option<(u64, Rect)> = None;
    for (x, y) in candidates.into_iter().flatten() {
        let label = Rect::new(x, y, size.0, size.1);
        if !image.contains_rect(&label) {
            continue;
        }
        let cover = covered(&label);
        if cover == 0 {
            return label;
        }
        if best.is_none_or(|(least, _)| cover < least) {
            best = Some((cover, label));
        }
    }
    best.map_or(Rect::new(rect.x, rect.y, size.0, size.1), |(_, label)| {
        label
    })
}

/// Draws each element's box and ID on `image`. `origin` is the screen position of the image's
/// top-left pixel and `scale` the image's size relative to the screen.
pub fn annotate(image: &mut RgbImage, origin: Point, scale: f64, elements: &[Element]) -> Drawn {
    let glyph_scale: u32 = if image.width() >= 1600 { 2 } else { 1 };
    let padding = 2 * glyph_scale as i32;
    let label_height = 8 * glyph_scale + 2 * padding as u32;
    let area = Rect::new(0, 0, image.width(), image.height());
    let boxes: Vec<Rect> = elements
        .iter()
        .map(|element| element.bounds.offset_from(origin).scaled(scale))
        .collect();
    let mut labels: Vec<Rect> = Vec::with_capacity(elements.len());
    let mut drawn = Drawn::default();
    for (element, &rect) in elements.iter().zip(&boxes) {
        let colour = colour_for(&element.id);
        outline(image, rect, 2, colour);
        let label_width = element.id.len() as u32 * 8 * glyph_scale + 2 * padding as u32;
        let label = place_label(rect, (label_width, label_height), &boxes, &labels, area);
        labels.push(label);
        fill(image, label, colour);
        text(
            image,
            Point {
                x: label.x + padding,
                y: label.y + padding,
            },
            &element.id,
            glyph_scale,
            Rgb([255, 255, 255]),
        );
        drawn.boxes.push((rect, label));
    }
    drawn
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels_of(boxes: &[Rect], image: Rect) -> Vec<Rect> {
        let mut labels = Vec::new();
        for rect in boxes {
            let label = place_label(*rect, (20, 12), boxes, &labels, image);
            labels.push(label);
        }
        labels
    }

    #[test]
    fn labels_go_above_and_cover_no_other_box_nor_label() {
        let image = Rect::new(0, 0, 400, 300);
        // A lone button: its label above its left end, as always.
        let button = Rect::new(50, 50, 80, 30);
        assert_eq!(labels_of(&[button], image), [Rect::new(50, 38, 20, 12)]);
        // A list of rows 16 px apart: above would cover the row before (its text); each label
        // finds a place that covers no other row and no other label.
        let rows: Vec<Rect> = (0..6)
            .map(|i| Rect::new(10, 100 + 16 * i, 300, 16))
            .collect();
        let labels = labels_of(&rows, image);
        for (i, label) in labels.iter().enumerate() {
            for (j, row) in rows.iter().enumerate() {
                assert!(
                    i == j || label.intersection(row).is_none(),
                    "label {i} {label} covers row {j}"
                );
            }
            for (j, other) in labels.iter().enumerate() {
                assert!(
                    i == j || label.intersection(other).is_none(),
                    "labels {i} and {j}"
                );
            }
            assert!(image.contains_rect(label));
        }
        // The first row still has room above it.
        assert_eq!(labels[0], Rect::new(10, 88, 20, 12));
        // A button inside a toolbar-sized box that holds it: the holder does not push it away.
        let holder = Rect::new(0, 200, 400, 60);
        let inner = Rect::new(100, 230, 60, 20);
        assert_eq!(
            labels_of(&[holder, inner], image)[1],
            Rect::new(100, 218, 20, 12)
        );
        // At the image's top-left corner, with no room above or on the left: on its right.
        let corner = Rect::new(0, 0, 10, 10);
        assert_eq!(labels_of(&[corner], image), [Rect::new(10, 0, 20, 12)]);
    }

    #[test]
    fn tiers_encode_and_decode_to_the_same_size() {
        let mut image = RgbImage::from_pixel(64, 32, Rgb([10, 20, 30]));
        image.put_pixel(5, 5, Rgb([255, 255, 255]));
        for quality in [Quality::Fast, Quality::Lossless, Quality::Small] {
            let encoded = encode(&image, quality).unwrap();
            let decoded = image::load_from_memory(&encoded.bytes).unwrap();
            assert_eq!((decoded.width(), decoded.height()), (64, 32));
            if quality != Quality::Small {
                assert_eq!(decoded.to_rgb8(), image, "PNG is lossless");
            }
        }
        assert_eq!(
            encode(&image, Quality::Small).unwrap().mime_type,
            "image/jpeg"
        );
    }

    #[test]
    fn downscale_keeps_the_aspect_and_reports_the_factor() {
        let image = RgbImage::new(1920, 1080);
        let (small, scale) = downscale(&image, Some(1280));
        assert_eq!((small.width(), small.height()), (1280, 720));
        assert!((scale - 2.0 / 3.0).abs() < 1e-9);
        // With no width asked for, or a larger one, the image is the size models take as it is
        // (1568 x 882 would be 1,792 of Claude's patches, over its 1,568).
        for asked in [None, Some(4000)] {
            let (fitted, scale) = downscale(&image, asked);
            assert_eq!((fitted.width(), fitted.height()), (1456, 819), "{asked:?}");
            assert!((scale - 1456.0 / 1920.0).abs() < 1e-9);
        }
        // A portrait monitor the same way; a laptop's 1366 x 768 is taken as it is.
        let (tall, _) = downscale(&RgbImage::new(1080, 1920), None);
        assert_eq!((tall.width(), tall.height()), (819, 1456));
        let (laptop, scale) = downscale(&RgbImage::new(1366, 768), None);
        assert_eq!((laptop.width(), laptop.height(), scale), (1366, 768, 1.0));
        // Smaller images are never scaled up.
        let (same, scale) = downscale(&RgbImage::new(800, 600), Some(1280));
        assert_eq!((same.width(), same.height(), scale), (800, 600, 1.0));
    }
}
