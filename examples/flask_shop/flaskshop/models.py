"""Products and orders of the Flask shop (Flask-SQLAlchemy, typed SQLAlchemy 2 models)."""

from __future__ import annotations

from decimal import Decimal

from flask_sqlalchemy import SQLAlchemy
from sqlalchemy import ForeignKey, Numeric, String
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


class Base(DeclarativeBase):
    pass


db = SQLAlchemy(model_class=Base)


class Product(Base):
    __tablename__ = "flaskshop_product"
    id: Mapped[int] = mapped_column(primary_key=True)
    sku: Mapped[str] = mapped_column(String(40), unique=True)
    stock: Mapped[int] = mapped_column(default=0)


class Order(Base):
    __tablename__ = "flaskshop_order"
    id: Mapped[int] = mapped_column(primary_key=True)
    product_id: Mapped[int] = mapped_column(ForeignKey("flaskshop_product.id"))
    quantity: Mapped[int]
    amount: Mapped[Decimal] = mapped_column(Numeric(10, 2))
    status: Mapped[str] = mapped_column(String(20), default="placed")
    # One order per client request id: a retried request finds the order it created.
    request_id: Mapped[str | None] = mapped_column(String(100), unique=True)
    instance_id: Mapped[str] = mapped_column(String(36), default="")
