//! Attachments on user messages: read from data URLs, kept through serde, and messages saved
//! before they existed still read.

use kiln_core::model::{Attachment, AttachmentError, AttachmentKind, AttachmentSource, Message};

#[test]
fn a_data_url_is_an_image_or_a_file_and_renders_back_the_same() {
    let png = Attachment::from_data_url("data:image/png;base64,iVBORw0KGgo=").expect("PNG");
    assert_eq!(png.kind, AttachmentKind::Image);
    assert_eq!(png.media_type, "image/png");
    assert_eq!(
        png.source,
        AttachmentSource::Base64 {
            data: "iVBORw0KGgo=".into()
        }
    );
    assert_eq!(png.url(), "data:image/png;base64,iVBORw0KGgo=");
    let pdf = Attachment::from_data_url("data:Application/PDF;name=r.pdf;base64,JVBERi0=")
        .expect("PDF with a parameter");
    assert_eq!(
        (pdf.kind, pdf.media_type.as_str()),
        (AttachmentKind::File, "application/pdf")
    );
    let bytes = Attachment::from_bytes("image/png", b"\x89PNG\r\n\x1a\n");
    assert_eq!(bytes, png, "bytes encode as the data URL's base64");
}

#[test]
fn a_malformed_data_url_is_a_typed_error() {
    for bad in [
        "https://example.com/a.png",
        "data:image/png,iVBORw0KGgo=",
        "data:;base64,iVBORw0KGgo=",
        "data:image/png;base64",
    ] {
        let e = Attachment::from_data_url(bad).expect_err(bad);
        assert!(matches!(e, AttachmentError::NotDataUrl(_)), "{bad}: {e:?}");
    }
    let e = Attachment::from_data_url("data:image/png;base64,not base64!").expect_err("bad");
    assert!(matches!(e, AttachmentError::BadBase64(_)), "{e:?}");
}

#[test]
fn messages_saved_without_attachments_still_read_and_plain_ones_save_as_before() {
    let old = r#"{"role":"user","content":"hi"}"#;
    let m: Message = serde_json::from_str(old).expect("an old message reads");
    assert_eq!(m, Message::user("hi"));
    assert_eq!(serde_json::to_string(&m).expect("json"), old);

    let png = Attachment::from_data_url("data:image/png;base64,iVBORw0KGgo=").expect("PNG");
    let m = Message::User {
        content: "look".into(),
        attachments: vec![png],
    };
    let text = serde_json::to_string(&m).expect("json");
    assert!(
        text.contains(r#""attachments":[{"kind":"image","media_type":"image/png","source":{"type":"base64","data":"iVBORw0KGgo="}}]"#),
        "{text}"
    );
    assert_eq!(
        serde_json::from_str::<Message>(&text).expect("reads back"),
        m
    );
}

#[test]
fn a_url_is_typed_by_its_extension() {
    let a = Attachment::from_url("https://e.com/r/Report.PDF?sig=1").expect("a PDF");
    assert_eq!(
        (a.kind, a.media_type.as_str()),
        (AttachmentKind::File, "application/pdf")
    );
    let url = "https://e.com/r/Report.PDF?sig=1".to_string();
    assert_eq!(a.source, AttachmentSource::Url { url: url.clone() });
    assert_eq!(a.url(), url);
    let img = Attachment::from_url("http://e.com/cat.jpeg#x").expect("an image");
    assert_eq!(
        (img.kind, img.media_type.as_str()),
        (AttachmentKind::Image, "image/jpeg")
    );
    assert_eq!(
        Attachment::from_url("https://e.com/cat"),
        None,
        "no extension"
    );
    assert_eq!(
        Attachment::from_url("ftp://e.com/cat.png"),
        None,
        "not http"
    );
    assert_eq!(
        kiln_core::model::attachment::media_type_of("a.b.webp"),
        Some("image/webp")
    );
    assert_eq!(
        kiln_core::model::attachment::media_type_of("notes.txt"),
        None
    );
}
