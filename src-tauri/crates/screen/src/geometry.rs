//! Screen geometry: rectangles and points in screen pixels (origin top-left of the virtual
//! screen, y down), the coordinate system of every bound this crate reports.

use serde::{Deserialize, Serialize};

/// A point in screen pixels.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Point {
    pub x: i32,
    pub y: i32,
}

/// A rectangle in screen pixels.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub struct Rect {
    pub x: i32,
    pub y: i32,
    pub width: u32,
    pub height: u32,
}

impl Rect {
    pub const fn new(x: i32, y: i32, width: u32, height: u32) -> Rect {
        Rect {
            x,
            y,
            width,
            height,
        }
    }

    pub fn right(&self) -> i32 {
        self.x.saturating_add(self.width as i32)
    }

    pub fn bottom(&self) -> i32 {
        self.y.saturating_add(self.height as i32)
    }

    pub fn is_empty(&self) -> bool {
        self.width == 0 || self.height == 0
    }

    pub fn center(&self) -> Point {
        Point {
            x: self.x + (self.width / 2) as i32,
            y: self.y + (self.height / 2) as i32,
        }
    }

    pub fn contains(&self, point: Point) -> bool {
        point.x >= self.x && point.x < self.right() && point.y >= self.y && point.y < self.bottom()
    }

    /// Whether `other` lies wholly inside this rectangle.
    pub fn contains_rect(&self, other: &Rect) -> bool {
        other.x >= self.x
            && other.y >= self.y
            && other.right() <= self.right()
            && other.bottom() <= self.bottom()
    }

    /// The overlap of two rectangles, `None` when they do not overlap.
    pub fn intersection(&self, other: &Rect) -> Option<Rect> {
        let left = self.x.max(other.x);
        let top = self.y.max(other.y);
        let right = self.right().min(other.right());
        let bottom = self.bottom().min(other.bottom());
        (right > left && bottom > top)
            .then(|| Rect::new(left, top, (right - left) as u32, (bottom - top) as u32))
    }

    /// The same rectangle relative to `origin`.
    pub fn offset_from(&self, origin: Point) -> Rect {
        Rect::new(
            self.x - origin.x,
            self.y - origin.y,
            self.width,
            self.height,
        )
    }

    /// Scales position and size by `factor` (used when an image is downscaled).
    pub fn scaled(&self, factor: f64) -> Rect {
        let left = (f64::from(self.x) * factor).round() as i32;
        let top = (f64::from(self.y) * factor).round() as i32;
        let right = (f64::from(self.right()) * factor).round() as i32;
        let bottom = (f64::from(self.bottom()) * factor).round() as i32;
        Rect::new(
            left,
            top,
            (right - left).max(0) as u32,
            (bottom - top).max(0) as u32,
        )
    }

    pub fn origin(&self) -> Point {
        Point {
            x: self.x,
            y: self.y,
        }
    }
}

impl std::fmt::Display for Rect {
    /// `812,440 96x32`: left,top width x height, the form the element list uses.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{},{} {}x{}", self.x, self.y, self.width, self.height)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intersection_and_center() {
        let a = Rect::new(0, 0, 100, 50);
        let b = Rect::new(90, 40, 20, 20);
        assert_eq!(a.intersection(&b), Some(Rect::new(90, 40, 10, 10)));
        assert_eq!(a.intersection(&Rect::new(100, 0, 5, 5)), None);
        assert_eq!(a.center(), Point { x: 50, y: 25 });
        assert!(a.contains(Point { x: 99, y: 49 }));
        assert!(!a.contains(Point { x: 100, y: 10 }));
        assert_eq!(Rect::new(10, 20, 30, 40).to_string(), "10,20 30x40");
        assert_eq!(
            Rect::new(10, 20, 30, 40).scaled(0.5),
            Rect::new(5, 10, 15, 20)
        );
    }
}
